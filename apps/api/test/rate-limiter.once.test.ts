import { createRateLimiter, leaseSize, type RateLimiter } from '@vouch/api';
import { dropPrefix, redisAvailable, TEST_REDIS_URL, testPrefix } from '@vouch/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const limits = (n: number) => ({ default: n, register: n, batch: n, compute: n });

describe('leaseSize', () => {
  it('is one point near the limit or with nothing known, a sixteenth of what is left otherwise, at most 1000', () => {
    expect(leaseSize(-3)).toBe(1);
    expect(leaseSize(0)).toBe(1);
    expect(leaseSize(31)).toBe(1);
    expect(leaseSize(32)).toBe(2);
    expect(leaseSize(999)).toBe(62);
    expect(leaseSize(10 ** 9)).toBe(1000);
  });
});

describe.runIf(await redisAvailable())('shared limits counted in leases', () => {
  const prefix = testPrefix();
  const redis = new Redis(TEST_REDIS_URL);
  const limiters: RateLimiter[] = [];
  // Until its Redis connection is ready a limiter counts in memory (the insurance limiter).
  const limiter = async (limit: number, windowSeconds = 60) => {
    const created = createRateLimiter({
      limits: limits(limit),
      windowSeconds,
      redisUrl: TEST_REDIS_URL,
      keyPrefix: `${prefix}:ratelimit`,
    });
    limiters.push(created);
    await expect
      .poll(() =>
        created.ping?.().then(
          () => true,
          () => false,
        ),
      )
      .toBe(true);
    return created;
  };
  const counter = async (client: string) => Number(await redis.get(`${prefix}:ratelimit:default:${client}`));

  beforeAll(async () => {
    await redis.ping();
  });
  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    await dropPrefix(prefix);
    redis.disconnect();
  });

  it('one replica admits exactly the limit, counts remaining exactly, and asks Redis far less than once per request', async () => {
    const one = await limiter(1000);
    const decisions = [];
    for (let i = 0; i < 1200; i++) decisions.push(await one.consume('default', 'ip:seq'));
    const allowed = decisions.filter((d) => d.allowed);
    expect(allowed).toHaveLength(1000);
    expect(decisions.slice(0, 1000).every((d) => d.allowed)).toBe(true);
    expect(allowed.map((d) => d.remaining)).toEqual(Array.from({ length: 1000 }, (_, i) => 999 - i));
    expect(decisions.slice(1000).every((d) => !d.allowed && d.remaining === 0 && d.resetSeconds >= 1)).toBe(true);
    // The counter ran ahead of the requests: it was taken in leases, not point by point.
    const early = await limiter(1000);
    for (let i = 0; i < 3; i++) await early.consume('default', 'ip:early');
    expect(await counter('ip:early')).toBeGreaterThan(60);
  });

  it('concurrent requests in one replica still admit exactly the limit', async () => {
    const one = await limiter(500);
    const decisions = await Promise.all(Array.from({ length: 800 }, () => one.consume('default', 'ip:burst')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(500);
  });

  it('a burst after a first lease still admits exactly the limit, leases asked for at once included', async () => {
    const one = await limiter(100);
    expect((await one.consume('default', 'ip:burst-leased')).allowed).toBe(true);
    // Every one of these asks Redis for a lease of 6 at once: most find the counter spent.
    const decisions = await Promise.all(Array.from({ length: 200 }, () => one.consume('default', 'ip:burst-leased')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(99);
    const after = [];
    for (let i = 0; i < 5; i++) after.push(await one.consume('default', 'ip:burst-leased'));
    expect(after.filter((d) => d.allowed)).toHaveLength(0);
  });

  it('two replicas sharing a client never admit more than the limit together', async () => {
    const a = await limiter(1000);
    const b = await limiter(1000);
    const decisions = await Promise.all(
      Array.from({ length: 3000 }, (_, i) => (i % 2 ? a : b).consume('default', 'ip:shared')),
    );
    const allowed = decisions.filter((d) => d.allowed).length;
    expect(allowed).toBeLessThanOrEqual(1000);
    // What one replica leased and did not use is lost to the other: at most a sixteenth of what was left.
    expect(allowed).toBeGreaterThanOrEqual(1000 - 62);
    expect(await counter('ip:shared')).toBeGreaterThanOrEqual(allowed);
  });

  it('a lease asked for with stale knowledge takes only what is left of the shared counter', async () => {
    const a = await limiter(1000);
    // Point 1, then a lease of 62 (a sixteenth of 999): `a` now believes 937 are left.
    for (let i = 0; i < 63; i++) expect((await a.consume('default', 'ip:stale')).allowed).toBe(true);
    expect(await counter('ip:stale')).toBe(63);
    // Other replicas count 927 more meanwhile: 10 are left, while `a` will ask for 58.
    await redis.incrby(`${prefix}:ratelimit:default:ip:stale`, 927);
    const later = [];
    for (let i = 0; i < 20; i++) later.push(await a.consume('default', 'ip:stale'));
    expect(later.filter((d) => d.allowed)).toHaveLength(10);
    expect(later.slice(0, 10).map((d) => d.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  it('drops a lease when its window ends: the new window starts from Redis, counted exactly', async () => {
    const short = await limiter(1000, 1);
    for (let i = 0; i < 5; i++) await short.consume('default', 'ip:window');
    expect(await counter('ip:window')).toBeGreaterThan(5); // a lease is held
    await expect.poll(async () => await redis.exists(`${prefix}:ratelimit:default:ip:window`)).toBe(0);
    const first = await short.consume('default', 'ip:window');
    expect(first).toMatchObject({ allowed: true, remaining: 999 });
    expect(await counter('ip:window')).toBe(1);
  });
});
