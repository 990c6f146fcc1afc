import { QUEUE_REPORT_MAX_AGE_MS, queueReporter } from '@vouch/api';
import { queueNames } from '@vouch/config';
import { createRuntime, loadConfig, type Runtime } from '@vouch/runtime';
import { successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  dropPrefix,
  post,
  redisAvailable,
  TEST_REDIS_URL,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

const hasRedis = await redisAvailable();

const queueReport = z.object({
  state: z.enum(['ok', 'idle', 'no_worker', 'unknown', 'in_process']),
  waiting: z.number().optional(),
  delayed: z.number().optional(),
  workers: z.number().optional(),
});
const readiness = successEnvelope(
  z.object({
    status: z.literal('ready'),
    checks: z.record(z.string(), z.string()),
    queues: z.record(z.string(), queueReport),
  }),
);

// The API alone (VOUCH_ROLE=api) on the shared Redis, under a prefix of this file's own: jobs
// queue up with nobody to run them until the test starts a worker.
describe.runIf(hasRedis)('/ready reports the job queues on BullMQ', () => {
  const prefix = testPrefix('ready');
  const env = { REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: prefix };
  let t: TestContext;
  let worker: Runtime | undefined;

  beforeAll(async () => {
    t = await createTestApp({ role: 'api', env, waitMs: 100 });
  });

  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await dropPrefix(prefix);
  });

  async function ready() {
    const res = await t.app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode, res.body).toBe(200);
    return readiness.parse(res.json()).data;
  }

  it('says when jobs wait on a queue no worker is connected to, and stays ready', async () => {
    const agents = [await createAgent(t.app), await createAgent(t.app), await createAgent(t.app)];
    for (const [i, agent] of agents.entries()) {
      const res = await post(t.app, '/api/agents/batch-scores', {
        agents: [agent],
        scores: [600 + i],
        reasons: ['0x'],
      });
      expect(res.statusCode).toBe(202);
    }
    // The answer is read at most once a second: wait for one read after the three jobs.
    await expect
      .poll(async () => (await ready()).queues.scores, { timeout: 5000, interval: 200 })
      .toEqual({ state: 'no_worker', waiting: 3, delayed: 0, workers: 0 });
    const data = await ready();
    expect(data.checks).toEqual({ database: 'ok', redis: 'ok' });
    // Nothing waits on the checks queue: no worker there is not a fault yet.
    expect(data.queues.checks).toEqual({ state: 'idle', waiting: 0, delayed: 0, workers: 0 });
    // The hourly purge of idempotency keys is scheduled on its queue and nobody will run it.
    expect(data.queues.maintenance).toMatchObject({ state: 'no_worker', workers: 0 });

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('vouch_queue_workers{queue="scores"} 0');
  });

  it('says the queue is fine once a worker process connects, and the worker drains it', async () => {
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ...env });
    worker = await createRuntime(config, {
      role: 'worker',
      database: t.database,
      logger: pino({ level: 'silent' }),
      workerId: 'ready test worker',
    });
    await expect
      .poll(async () => (await ready()).queues.scores, { timeout: 10_000, interval: 200 })
      .toEqual({ state: 'ok', waiting: 0, delayed: 0, workers: 1 });
    const data = await ready();
    for (const report of Object.values(data.queues)) expect(report).toMatchObject({ state: 'ok', workers: 1 });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toContain(
      'vouch_queue_workers{queue="scores"} 1',
    );

    // The worker's connection is named after its process, so an operator can tell whose it is.
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    const queue = new Queue('scores', { connection, prefix });
    try {
      const clients = await queue.getWorkers();
      expect(clients.map((c) => c.rawname)).toEqual([expect.stringMatching(/:w:ready-test-worker$/)]);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  it('reads Redis at most once a second, however many probes come', async () => {
    let reads = 0;
    const report = queueReporter(() => {
      reads++;
      return t.jobs.inspect();
    });
    const answers = await Promise.all(Array.from({ length: 50 }, () => report()));
    expect(reads).toBe(1);
    expect(answers[0]?.scores).toMatchObject({ state: 'ok', workers: 1 });
    await report();
    expect(reads).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, QUEUE_REPORT_MAX_AGE_MS));
    await report();
    expect(reads).toBe(2);
  });
});

describe('/ready with the in-process runner', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('says that this process runs the jobs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    const { queues } = readiness.parse(res.json()).data;
    expect(Object.keys(queues).sort()).toEqual([...queueNames].sort());
    for (const report of Object.values(queues)) expect(report.state).toBe('in_process');
    expect(queues.scores).toEqual({ state: 'in_process', waiting: 0, delayed: 0 });
  });
});
