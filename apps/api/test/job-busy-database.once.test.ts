import { sql } from '@vouch/db';
import {
  createAgent,
  createTestApp,
  dropPrefix,
  holdTransaction,
  post,
  redisAvailable,
  TEST_REDIS_URL,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

// A batch whose every attempt meets a busy database (its agent's row held past the statement
// timeout): docs/api.md answers a busy database 503 SERVICE_UNAVAILABLE, and docs/jobs.md says
// a job behaves the same whichever transport runs it. Both transports must answer alike.
const hasRedis = await redisAvailable();
const prefix = testPrefix('busy-db');

const transports: Array<[string, () => Promise<TestContext>]> = [
  ['in-process', () => createTestApp({ jobs: 'in-process', statementTimeoutMs: 300 })],
  [
    'bullmq',
    () =>
      createTestApp({
        role: 'all',
        statementTimeoutMs: 300,
        env: { REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: prefix, JOB_WAIT_TIMEOUT_MS: '15000' },
      }),
  ],
];

afterAll(async () => {
  if (hasRedis) await dropPrefix(prefix);
});

describe.runIf(hasRedis).each(transports)('a batch that fails on a busy database (%s)', (_name, make) => {
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
});
