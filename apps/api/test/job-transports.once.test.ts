import { sql } from '@vouch/db';
import type { Processors } from '@vouch/jobs';
import {
  bullmqApps,
  createAgent,
  createTestApp,
  get,
  holdTransaction,
  post,
  redisAvailable,
  type TestAppOptions,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

// docs/jobs.md: "a job behaves the same whichever transport runs it". Each case runs the same app
// in process and on BullMQ (Redis, workers in the test process): a job failing on a busy database
// answers 503 and reads back SERVICE_UNAVAILABLE, a flow's child included, and a job still running
// at the stop holds the close no longer than SHUTDOWN_TIMEOUT_MS.
const hasRedis = await redisAvailable();
const onBullmq = bullmqApps('job-transports');

afterAll(async () => {
  if (hasRedis) await onBullmq.dropAll();
});

/** Makes the app `options` describe, with more settings if given. */
type Make = (env?: Record<string, string>) => Promise<TestContext>;

/** The same app on each transport: in process, and on BullMQ under a Redis prefix of its own per app. */
function transports(options: TestAppOptions): Array<[string, Make]> {
  return [
    ['in-process', (env) => createTestApp({ ...options, jobs: 'in-process', env: { ...options.env, ...env } })],
    ['bullmq', (env) => onBullmq.create({ ...options, env: { ...options.env, ...env } })],
  ];
}

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

const SHUTDOWN_TIMEOUT_MS = 500;
const JOB_MS = 8000;

const slow = (real: Processors): Processors => ({
  ...real,
  'scores.batch': async () => {
    await new Promise((resolve) => setTimeout(resolve, JOB_MS));
    throw new Error('the slow batch gave up');
  },
});

describe.runIf(hasRedis).each(transports({ statementTimeoutMs: 300, env: { JOB_WAIT_TIMEOUT_MS: '15000' } }))(
  'a batch that fails on a busy database (%s)',
  (_name, make) => {
    let t: TestContext | undefined;
    afterAll(async () => t?.close());

    it('answers 503 SERVICE_UNAVAILABLE after its last attempt, not 500', async () => {
      t = await make();
      const app = t.app;
      const agent = await createAgent(app);
      const row = await holdTransaction(t.database.db, (trx) =>
        sql`SELECT 1 FROM agents WHERE address = ${agent} FOR UPDATE`.execute(trx),
      );
      let res: Awaited<ReturnType<typeof post>>;
      try {
        res = await post(app, '/api/agents/batch-scores', { agents: [agent], scores: [600], reasons: ['0x'] });
      } finally {
        await row.release();
      }
      expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
      });
    }, 60_000);
  },
);

describe.runIf(hasRedis).each(transports({ processors: failing }))(
  'a job that fails on a busy database (%s)',
  (_name, make) => {
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

    // A job answered 202 that then fails on a busy database reads back as the waiting caller
    // would have been answered (503): for a recomputation, its chunk's reason, not BullMQ's
    // "child … failed".
    for (const [what, send] of [
      [
        'a batch',
        (agent: string) => ({
          url: '/api/agents/batch-scores',
          body: { agents: [agent], scores: [600], reasons: ['0x'] },
        }),
      ],
      ['a recomputation', (agent: string) => ({ url: '/api/scores/recompute', body: { agents: [agent] } })],
    ] as const) {
      it(`${what} answered 202 that then fails on a busy database reads back as SERVICE_UNAVAILABLE`, async () => {
        const t = await make({ JOB_WAIT_TIMEOUT_MS: '200' });
        try {
          const { url, body } = send(await createAgent(t.app));
          const res = await post(t.app, url, body);
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
    }
  },
);

describe.runIf(hasRedis).each(
  transports({
    processors: slow,
    env: { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), JOB_WAIT_TIMEOUT_MS: '200' },
  }),
)('stopping while a job runs (%s)', (_name, make) => {
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
