import type { Processors } from '@vouch/jobs';
import {
  createAgent,
  createTestApp,
  dropPrefix,
  get,
  post,
  redisAvailable,
  TEST_REDIS_URL,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

// docs/jobs.md: "the last attempt failed because the database was ... busy (a statement or lock
// timeout) | failed, as a dependency | failed with SERVICE_UNAVAILABLE: the waiting caller
// answers 503, as in process", and "a job behaves the same whichever transport runs it".
// Here the dependency failure comes from a recomputation's chunk (a flow child), and from a
// batch whose caller was already answered 202 and reads the job later.
const hasRedis = await redisAvailable();
const prefix = testPrefix('dependency-failure');

/** What PostgreSQL throws for a statement past statement_timeout. */
const busy = () => Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });

const failing = (real: Processors): Processors => ({
  ...real,
  'scores.recompute-chunk': async () => {
    throw busy();
  },
  'scores.batch': async () => {
    throw busy();
  },
});

const transports: Array<[string, (env: Record<string, string>) => Promise<TestContext>]> = [
  ['in-process', (env) => createTestApp({ jobs: 'in-process', processors: failing, env })],
  [
    'bullmq',
    (env) =>
      createTestApp({
        role: 'all',
        processors: failing,
        env: { REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: `${prefix}-${env.JOB_WAIT_TIMEOUT_MS}`, ...env },
      }),
  ],
];

afterAll(async () => {
  if (hasRedis) {
    await dropPrefix(`${prefix}-15000`);
    await dropPrefix(`${prefix}-200`);
  }
});

describe.runIf(hasRedis).each(transports)('a job that fails on a busy database (%s)', (_name, make) => {
  it('a recomputation whose chunk fails on a busy database answers 503, not 500', async () => {
    const t = await make({ JOB_WAIT_TIMEOUT_MS: '15000' });
    try {
      const agent = await createAgent(t.app);
      const res = await post(t.app, '/api/scores/recompute', { agents: [agent] });
      expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
      });
    } finally {
      await t.close();
    }
  }, 60_000);

  it('a batch answered 202 that then fails on a busy database reads back as SERVICE_UNAVAILABLE', async () => {
    const t = await make({ JOB_WAIT_TIMEOUT_MS: '200' });
    try {
      const agent = await createAgent(t.app);
      const res = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [600], reasons: ['0x'] });
      expect(res.statusCode).toBe(202);
      const id = res.headers['x-job-id'] as string;
      let job: { status: string; error: { code: string; message: string } | null } | undefined;
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        job = (await get(t.app, `/api/jobs/${id}`)).json().data;
        if (job?.status === 'failed') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(job?.status).toBe('failed');
      expect(job?.error).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        message: 'a dependency is unavailable; retry shortly',
      });
    } finally {
      await t.close();
    }
  }, 60_000);
});
