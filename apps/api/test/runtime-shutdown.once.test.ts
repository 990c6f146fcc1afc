import type { Processors } from '@vouch/jobs';
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
import { afterAll, describe, expect, it } from 'vitest';

// runtime.ts: close() closes "Workers (bounded by SHUTDOWN_TIMEOUT_MS), job transport, cache, then
// the database", and startup.ts exits 1 ("shutdown deadline passed") when the whole close takes
// longer than SHUTDOWN_TIMEOUT_MS + 1 s. A job still running at the stop must hold the close no
// longer than SHUTDOWN_TIMEOUT_MS on either transport.
const hasRedis = await redisAvailable();
const prefix = testPrefix('runtime-shutdown');
const SHUTDOWN_TIMEOUT_MS = 500;
const JOB_MS = 8000;

const slow = (real: Processors): Processors => ({
  ...real,
  'scores.batch': async () => {
    await new Promise((resolve) => setTimeout(resolve, JOB_MS));
    throw new Error('the slow batch gave up');
  },
});

const env = { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), JOB_WAIT_TIMEOUT_MS: '200' };
const transports: Array<[string, () => Promise<TestContext>]> = [
  ['in-process', () => createTestApp({ jobs: 'in-process', processors: slow, env })],
  [
    'bullmq',
    () =>
      createTestApp({
        role: 'all',
        processors: slow,
        env: { ...env, REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: prefix },
      }),
  ],
];

afterAll(async () => {
  if (hasRedis) await dropPrefix(prefix);
});

describe.runIf(hasRedis).each(transports)('stopping while a job runs (%s)', (_name, make) => {
  it('the runtime closes within SHUTDOWN_TIMEOUT_MS (and the 1 s the signal handler adds)', async () => {
    const t = await make();
    try {
      const agent = await createAgent(t.app);
      const res = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [600], reasons: ['0x'] });
      expect(res.statusCode).toBe(202);
      await t.app.close();
      const started = Date.now();
      await t.runtime.close();
      // Bounded by the deadline, not by the job: well under the job's 8 s (the bound is not a timing of the close).
      expect(Date.now() - started, 'ms the runtime took to close').toBeLessThan(JOB_MS / 2);
    } finally {
      await t.close();
    }
  }, 60_000);
});
