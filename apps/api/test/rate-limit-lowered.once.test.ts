import { createRateLimiter, type RateLimiter } from '@vouch/api';
import { dropPrefix, redisAvailable, TEST_REDIS_URL, testPrefix } from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

// docs/edge.md: an organization's allowance is RATE_LIMIT_ORGANIZATION, "or the organization's own
// (`rateLimitPerMinute`, set by the operator with PATCH /api/organizations/:id; every replica reads
// the organizations' own limits at start and every 30 s)". rate-limiter.ts: "organizations with
// limits of their own share the counter's keys but not its number of points". An operator who
// lowers a busy organization's limit mid-window expects the requests it has already made to count.
const limits = { default: 1000, register: 1000, batch: 1000, compute: 1000 };
const prefix = testPrefix('rate-limit-lowered');
const made: RateLimiter[] = [];

afterAll(async () => {
  await Promise.all(made.map((l) => l.close()));
  await dropPrefix(prefix);
});

async function memory() {
  const limiter = createRateLimiter({ limits, keyPrefix: `${prefix}:memory` });
  made.push(limiter);
  return limiter;
}

async function redis() {
  const limiter = createRateLimiter({ limits, redisUrl: TEST_REDIS_URL, keyPrefix: `${prefix}:redis` });
  made.push(limiter);
  await expect
    .poll(() =>
      limiter.ping?.().then(
        () => true,
        () => false,
      ),
    )
    .toBe(true);
  return limiter;
}

const stores: Array<[string, () => Promise<RateLimiter>]> = [
  ['redis', redis],
  ['memory', memory],
];

describe.runIf(await redisAvailable()).each(stores)(
  'an organization whose limit is lowered mid-window (%s)',
  (_n, make) => {
    it('keeps the requests it has already made in the window: 8 of 10 made, a new limit of 5 refuses', async () => {
      const limiter = await make();
      for (let i = 0; i < 8; i++) expect((await limiter.consume('organization', 'org-a', 10)).allowed).toBe(true);
      const after = await limiter.consume('organization', 'org-a', 5);
      expect({ allowed: after.allowed, remaining: after.remaining }).toEqual({ allowed: false, remaining: 0 });
    });

    it('refuses at once after a high limit: 8 of 1000 made, a new limit of 5 admits nothing more', async () => {
      const limiter = await make();
      // Far below 1000, a replica takes points from Redis ahead of use (docs/edge.md, Leases).
      for (let i = 0; i < 8; i++) expect((await limiter.consume('organization', 'org-b', 1000)).allowed).toBe(true);
      const after = [];
      for (let i = 0; i < 3; i++) after.push(await limiter.consume('organization', 'org-b', 5));
      expect(after.map((d) => ({ allowed: d.allowed, remaining: d.remaining }))).toEqual(
        Array(3).fill({ allowed: false, remaining: 0 }),
      );
    });

    it('a limit lowered above what was made admits up to it and no further', async () => {
      const limiter = await make();
      for (let i = 0; i < 8; i++) expect((await limiter.consume('organization', 'org-c', 1000)).allowed).toBe(true);
      const allowed = [];
      for (let i = 0; i < 10; i++) allowed.push((await limiter.consume('organization', 'org-c', 12)).allowed);
      expect(allowed.filter(Boolean).length).toBe(4);
    });
  },
);
