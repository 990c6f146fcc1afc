import { QUEUE_REPORT_MAX_AGE_MS } from '@vouch/api';
import { queueNames } from '@vouch/config';
import { createdApiKey, failureEnvelope, successEnvelope } from '@vouch/schemas';
import { createTestApp, type DisposableRedis, randomAddress, startRedisServer, type TestContext } from '@vouch/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ADMIN = 'readiness-admin-secret-0123';
const admin = { authorization: `Bearer ${ADMIN}` };

// A Redis of this file's own, which the test stops halfway.
describe('readiness, job metrics and the dashboard with BullMQ on a disposable Redis', () => {
  let redis: DisposableRedis;
  let t: TestContext;

  beforeAll(async () => {
    redis = await startRedisServer();
    // The API with a BullMQ worker in the same process, as `npm start` runs with REDIS_URL.
    t = await createTestApp({
      role: 'all',
      env: { REDIS_URL: redis.url, WORKER_CONCURRENCY: '1', JOB_WAIT_TIMEOUT_MS: '5000', SHUTDOWN_TIMEOUT_MS: '1000' },
      edge: {
        auth: { mode: 'on', adminKey: ADMIN },
        rateLimit: { limits: { default: 1000, register: 1000, batch: 1000, compute: 1000 }, redisUrl: redis.url },
      },
    });
  });

  afterAll(async () => {
    await t?.close();
    await redis?.kill();
  });

  it('is ready when PostgreSQL and Redis answer', async () => {
    await expect.poll(async () => (await t.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    const res = await t.app.inject({ method: 'GET', url: '/ready' });
    expect(res.json()).toMatchObject({
      success: true,
      data: { status: 'ready', checks: { database: 'ok', redis: 'ok' } },
    });
    // The worker inside this process (role `all`) works every queue.
    await expect
      .poll(async () => Object.values((await t.app.inject({ method: 'GET', url: '/ready' })).json().data.queues), {
        timeout: 5000,
      })
      .toEqual(Array(queueNames.length).fill(expect.objectContaining({ state: 'ok', workers: 1 })));
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json()).toEqual({
      success: true,
      data: { status: 'ok' },
    });
  });

  /** Registers a new agent (Postgres, not the queue); returns its address. */
  async function register() {
    const address = randomAddress();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/agents/register',
      payload: { address },
      headers: admin,
    });
    expect(res.statusCode).toBe(201);
    return address;
  }

  /** Registers a new agent and sends it a batch score (the queue); returns the batch answer. */
  async function registerAndBatch(score: number) {
    const address = await register();
    return t.app.inject({
      method: 'POST',
      url: '/api/agents/batch-scores',
      payload: { agents: [address], scores: [score], reasons: ['0x01'] },
      headers: admin,
    });
  }

  it('exports job counts and durations by queue, and pool usage', async () => {
    const batch = await registerAndBatch(700);
    expect(batch.statusCode, batch.body).toBe(200);

    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toContain('vouch_jobs{queue="scores",state="completed"} 1');
    expect(text).toContain('vouch_jobs{queue="scores",state="waiting"} 0');
    expect(text).toContain('vouch_jobs{queue="checks",state="failed"} 0');
    expect(text).toContain('vouch_job_duration_seconds_count{queue="scores",state="completed"} 1');
    expect(text).toMatch(/http_requests_total\{method="POST",route="\/api\/agents\/batch-scores",status="200"\} 1/);
    if (t.database.driver === 'postgres') {
      expect(text).toMatch(/vouch_db_pool_connections\{state="total"\} \d+/);
      expect(text).toMatch(/vouch_db_pool_connections\{state="waiting"\} 0/);
      expect(text).toContain('vouch_db_pool_max 20');
    }
    // A job is counted once however many scrapes see it.
    const again = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(again.body).toContain('vouch_job_duration_seconds_count{queue="scores",state="completed"} 1');
  });

  it('counts a finished job once when two scrapes run at once', async () => {
    const completed = async () => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      const line = /vouch_job_duration_seconds_count\{queue="scores",state="completed"\} (\d+)/.exec(text);
      return Number(line?.[1]);
    };
    const before = await completed();
    const batch = await registerAndBatch(650);
    expect(batch.statusCode, batch.body).toBe(200);
    // Two Prometheus servers of a pair scrape the same target at the same moment.
    await Promise.all([completed(), completed()]);
    expect(await completed()).toBe(before + 1);
  });

  it('serves the queue dashboard to the admin scope only, with a browser login prompt', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/admin/queues' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Basic realm="vouch admin"/);

    const created = await t.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'writer', scopes: ['write'] },
      headers: admin,
    });
    const writer = successEnvelope(createdApiKey).parse(created.json()).data.key;
    const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`ops:${secret}`).toString('base64')}` });
    expect((await t.app.inject({ method: 'GET', url: '/admin/queues', headers: basic(writer) })).statusCode).toBe(403);

    const page = await t.app.inject({ method: 'GET', url: '/admin/queues', headers: basic(ADMIN) });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<html');
    // The page's own scripts and styles are allowed; the JSON API's CSP would forbid them.
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const api = await t.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: basic(ADMIN) });
    expect(api.statusCode).toBe(200);

    // An organization's admin key manages that organization; the dashboard shows every one's jobs.
    const orgAdmin = successEnvelope(createdApiKey).parse(
      (
        await t.app.inject({
          method: 'POST',
          url: '/api/keys',
          payload: { name: 'org admin', scopes: ['admin'] },
          headers: admin,
        })
      ).json(),
    ).data.key;
    for (const [method, url] of [
      ['GET', '/admin/queues'],
      ['GET', '/admin/queues/api/queues'],
      ['PUT', '/admin/queues/api/queues/maintenance/pause'],
    ] as const) {
      const refused = await t.app.inject({ method, url, headers: basic(orgAdmin) });
      expect(refused.statusCode, `${method} ${url}`).toBe(403);
      expect(refused.json().error.message).toMatch(/only the operator's key \(ADMIN_API_KEY\)/);
    }
  });

  it('with AUTH off and an admin key set, the dashboard needs that key, to read and to change', async () => {
    const open = await createTestApp({
      env: { REDIS_URL: redis.url, SHUTDOWN_TIMEOUT_MS: '1000' },
      edge: { auth: { mode: 'off', adminKey: ADMIN } },
    });
    try {
      const basic = { authorization: `Basic ${Buffer.from(`ops:${ADMIN}`).toString('base64')}` };
      for (const [method, url] of [
        ['GET', '/admin/queues'],
        ['GET', '/admin/queues/api/queues'],
        ['PUT', '/admin/queues/api/queues/maintenance/pause'],
      ] as const) {
        expect((await open.app.inject({ method, url })).statusCode, `${method} ${url}`).toBe(401);
      }
      expect((await open.app.inject({ method: 'GET', url: '/admin/queues', headers: basic })).statusCode).toBe(200);
      // The API itself stays open, as AUTH off says.
      expect((await open.app.inject({ method: 'GET', url: '/api/agents' })).statusCode).toBe(200);
    } finally {
      await open.close();
    }
  });

  /** Registers a new agent and asks for its recomputation; returns the agent and the answer. */
  async function registerAndRecompute() {
    const address = await register();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/scores/recompute',
      payload: { agents: [address] },
      headers: admin,
    });
    return { address, res };
  }

  /** The `score.recompute` entries of the operator's log that name `address`. */
  async function recomputeEntries(address: string) {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/audit?action=score.recompute&limit=100',
      headers: admin,
    });
    expect(res.statusCode, res.body).toBe(200);
    const entries: Array<{ details: { agents: string[]; jobId: string } }> = res.json().data.entries;
    return entries.filter((e) => e.details.agents.includes(address)).map((e) => e.details);
  }

  it('records a recomputation in the audit log with the job it queued', async () => {
    const { address, res } = await registerAndRecompute();
    expect(res.statusCode, res.body).toBe(200);
    expect(await recomputeEntries(address)).toEqual([
      { all: false, agents: [address], jobId: res.headers['x-job-id'] },
    ]);
  });

  it('answers within its bound while Redis stops answering, and is ready again after', async () => {
    const pauser = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      await pauser.call('CLIENT', 'PAUSE', '3500', 'ALL');
      // Past the queue report's cache, so the probe reads the queues from the paused Redis too.
      await new Promise((resolve) => setTimeout(resolve, QUEUE_REPORT_MAX_AGE_MS + 100));
      const started = Date.now();
      const res = await t.app.inject({ method: 'GET', url: '/ready' });
      expect(Date.now() - started).toBeLessThan(1800);
      expect(res.statusCode).toBe(503);
      expect(failureEnvelope.parse(res.json()).error.details).toEqual({
        checks: { database: 'ok', redis: 'unavailable' },
      });
      await expect
        .poll(async () => (await t.app.inject({ method: 'GET', url: '/ready' })).statusCode, { timeout: 10_000 })
        .toBe(200);
    } finally {
      pauser.disconnect();
    }
  });

  it('goes 503 within a bounded time when Redis stops, while reads keep working', async () => {
    await t.runtime.workers?.close(1000);
    await redis.kill();

    const deadline = Date.now() + 10_000;
    let res = await t.app.inject({ method: 'GET', url: '/ready' });
    while (res.statusCode !== 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await t.app.inject({ method: 'GET', url: '/ready' });
    }
    expect(res.statusCode).toBe(503);
    const body = failureEnvelope.parse(res.json());
    expect(body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(body.error.details).toEqual({ checks: { database: 'ok', redis: 'unavailable' } });
    expect(res.headers['retry-after']).toBe('1');

    // Every probe answers promptly, never hangs.
    const started = Date.now();
    expect((await t.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(503);
    expect(Date.now() - started).toBeLessThan(2500);

    // Reads still work, and are still limited (per process now).
    const read = await t.app.inject({ method: 'GET', url: '/api/agents', headers: admin });
    expect(read.statusCode).toBe(200);
    expect(read.headers['ratelimit-policy']).toBe('1000;w=60');
    // Writes to Postgres too; queued work says the queue is unavailable instead of hanging.
    const batch = await registerAndBatch(1);
    expect(batch.statusCode).toBe(503);
    expect(failureEnvelope.parse(batch.json()).error.code).toBe('SERVICE_UNAVAILABLE');
    // A recomputation that could not be queued is not on record as asked for.
    const refused = await registerAndRecompute();
    expect(refused.res.statusCode).toBe(503);
    expect(await recomputeEntries(refused.address)).toEqual([]);
    // The dashboard says the queue is unavailable instead of waiting for Redis.
    const basicAdmin = { authorization: `Basic ${Buffer.from(`ops:${ADMIN}`).toString('base64')}` };
    const dashboard = await Promise.race([
      t.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: basicAdmin }),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000)),
    ]);
    expect(dashboard?.statusCode).toBe(503);
    expect(failureEnvelope.parse(dashboard?.json()).error.code).toBe('SERVICE_UNAVAILABLE');
    // The scrape still answers, without the Redis figures it could not read.
    const scrapeStarted = Date.now();
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(Date.now() - scrapeStarted).toBeLessThan(3000);
    expect(metrics.body).toContain('http_requests_total');
  });
});
