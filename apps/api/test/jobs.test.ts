import { systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { type JobContext, jobs, type Processors } from '@vouch/jobs';
import {
  createAgent,
  createTestApp,
  get,
  holdTransaction,
  latch,
  lockWaiters,
  post,
  randomAddress,
  recordTx,
  SEEDED_SCORE,
  seedScoredAgents,
  type TestContext,
  until,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// The queued endpoints on the embedded (in-process) runner: the same processors the workers run.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ jobs: 'in-process', chunkSize: 40, refreshDelayMs: 10 });
});
afterAll(() => t.close());

async function history(agent: string) {
  return t.database.db
    .selectFrom('score_events')
    .select(['old_score', 'new_score', 'source', 'reason'])
    .where('agent', '=', agent)
    .orderBy('id')
    .execute();
}

describe('POST /api/agents/batch-scores', () => {
  it('applies every score with a history row and answers {updated, agents}', async () => {
    const agents = [await createAgent(t.app), await createAgent(t.app), await createAgent(t.app)];
    const res = await post(t.app, '/api/agents/batch-scores', {
      agents,
      scores: [950, 500, 0],
      reasons: ['0x01', '0x02', '0x'],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({
      updated: 3,
      agents: [
        { address: agents[0], score: 950, grade: 'AAA' },
        { address: agents[1], score: 500, grade: 'CCC' },
        { address: agents[2], score: 0, grade: 'D' },
      ],
    });
    expect((await get(t.app, `/api/agents/${agents[0]}/score`)).json().data.score).toBe(950);
    // The job answered inline can still be looked up by its id.
    const job = await get(t.app, `/api/jobs/${res.headers['x-job-id']}`);
    expect(job.json().data).toMatchObject({ status: 'completed', result: { updated: 3 } });
    expect(await history(agents[1] as string)).toEqual([
      { old_score: 0, new_score: 500, source: 'batch', reason: '0x02' },
    ]);
  });

  it('refuses bad batches before anything is queued, changing nothing', async () => {
    const a = await createAgent(t.app);
    const observed = randomAddress();
    await recordTx(t.app, observed);
    const cases: Array<[unknown, number, string]> = [
      [{ agents: [a], scores: [1, 2], reasons: ['0x'] }, 400, 'VALIDATION_ERROR'],
      [{ agents: [a, a], scores: [1, 2], reasons: ['0x', '0x'] }, 400, 'VALIDATION_ERROR'],
      [{ agents: [], scores: [], reasons: [] }, 400, 'VALIDATION_ERROR'],
      [{ agents: [a], scores: [1001], reasons: ['0x'] }, 400, 'VALIDATION_ERROR'],
      [{ agents: [a], scores: [1], reasons: ['nothex'] }, 400, 'VALIDATION_ERROR'],
      [
        {
          agents: Array.from({ length: 1001 }, randomAddress),
          scores: Array(1001).fill(1),
          reasons: Array(1001).fill('0x'),
        },
        400,
        'VALIDATION_ERROR',
      ],
      [{ agents: [a, randomAddress()], scores: [1, 2], reasons: ['0x', '0x'] }, 404, 'AGENT_NOT_FOUND'],
      [{ agents: [a, observed], scores: [1, 2], reasons: ['0x', '0x'] }, 422, 'AGENT_NOT_REGISTERED'],
    ];
    for (const [body, status, code] of cases) {
      const res = await post(t.app, '/api/agents/batch-scores', body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(res.json().error.code).toBe(code);
    }
    expect(await history(a)).toEqual([]);
  });

  it('is all or nothing when the worker finds an agent it cannot score', async () => {
    const a = await createAgent(t.app);
    const observed = randomAddress();
    await recordTx(t.app, observed);
    await expect(
      t.services.scores.applyBatch(
        [
          { address: a, score: 700, reason: '0x' },
          { address: observed, score: 700, reason: '0x' },
        ],
        'job-atomic-test',
        systemActor(),
      ),
    ).rejects.toMatchObject({ code: 'AGENT_NOT_REGISTERED' });
    expect(await history(a)).toEqual([]);
    expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(0);
  });

  it('a redelivered batch job does not write twice', async () => {
    const a = await createAgent(t.app);
    const entries = [{ address: a, score: 321, reason: '0xaa' }];
    await t.services.scores.applyBatch(entries, 'job-redelivered', systemActor());
    await t.services.scores.applyBatch(entries, 'job-redelivered', systemActor());
    expect(await history(a)).toHaveLength(1);
  });
});

describe('POST /api/scores/recompute', () => {
  it('recomputes all agents in chunks, storing each changed score once with source model', async () => {
    const ctx = await createTestApp({ jobs: 'in-process', chunkSize: 40 });
    try {
      const agents = await seedScoredAgents(ctx.database.db, 130);
      const res = await post(ctx.app, '/api/scores/recompute', { all: true });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({ agents: 130, chunks: 4, updated: 130, unchanged: 0 });
      const events = await ctx.database.db
        .selectFrom('score_events')
        .select(['agent', 'new_score', 'source'])
        .execute();
      expect(events).toHaveLength(130);
      expect(new Set(events.map((e) => e.agent))).toEqual(new Set(agents));
      expect(events.every((e) => e.new_score === SEEDED_SCORE && e.source === 'model')).toBe(true);
      // Nothing changed since: a second run writes nothing.
      const again = await post(ctx.app, '/api/scores/recompute', { agents: agents.slice(0, 10) });
      expect(again.json().data).toMatchObject({ agents: 10, chunks: 1, updated: 0, unchanged: 10 });
    } finally {
      await ctx.close();
    }
  });

  it('404s for unknown agents and 400s for a bad body', async () => {
    expect((await post(t.app, '/api/scores/recompute', { agents: [randomAddress()] })).statusCode).toBe(404);
    for (const body of [{}, { all: false }, { agents: [] }, { agents: ['0x1'] }, { all: true, agents: [] }]) {
      expect((await post(t.app, '/api/scores/recompute', body)).statusCode, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('recording a transaction', () => {
  it('schedules a refresh of the agent’s score from the model', async () => {
    const agent = await createAgent(t.app);
    await recordTx(t.app, agent, { amount: (10n ** 18n).toString() });
    let score = 0;
    for (let i = 0; i < 100 && score === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      score = (await get(t.app, `/api/agents/${agent}/score`)).json().data.score;
    }
    expect(score).toBe(SEEDED_SCORE);
    expect(await history(agent)).toEqual([{ old_score: 0, new_score: SEEDED_SCORE, source: 'model', reason: null }]);
  });
});

describe('a score set by a client', () => {
  it('holds through the refresh after a recorded transaction, until an explicit recomputation', async () => {
    const refreshed: string[] = [];
    const ctx = await createTestApp({
      jobs: 'in-process',
      refreshDelayMs: 10,
      processors: (real) => ({
        ...real,
        'scores.refresh-agent': async (
          payload: Parameters<Processors['scores.refresh-agent']>[0],
          jobCtx: JobContext,
        ) => {
          const result = await real['scores.refresh-agent'](payload, jobCtx);
          refreshed.push(payload.agent);
          return result;
        },
      }),
    });
    try {
      const agent = await createAgent(ctx.app);
      expect((await post(ctx.app, `/api/agents/${agent}/score`, { score: 900, reason: '0x01' })).statusCode).toBe(200);
      await recordTx(ctx.app, agent, { amount: (10n ** 18n).toString() });
      await expect.poll(() => refreshed.includes(agent)).toBe(true);
      expect((await get(ctx.app, `/api/agents/${agent}/score`)).json().data.score).toBe(900);
      // An explicit recomputation replaces it with the model's score.
      const recompute = await post(ctx.app, '/api/scores/recompute', { agents: [agent] });
      expect(recompute.json().data.updated).toBe(1);
      expect((await get(ctx.app, `/api/agents/${agent}/score`)).json().data.score).toBe(SEEDED_SCORE);
    } finally {
      await ctx.close();
    }
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('scores written at the same time', () => {
  const scoreOf = async (agent: string) => (await get(t.app, `/api/agents/${agent}/score`)).json().data.score;

  it('a client’s score committed while a refresh runs holds: it waits for the refresh, not the other way', async () => {
    const agent = await createAgent(t.app);
    await recordTx(t.app, agent, { amount: (10n ** 18n).toString() });
    await until(async () => (await scoreOf(agent)) === SEEDED_SCORE, 10_000, 20);
    // A refresh (as after a recorded transaction) that is slow to read the ledger.
    const ledger = await holdTransaction(t.database.db, (trx) =>
      sql`LOCK TABLE spends IN ACCESS EXCLUSIVE MODE`.execute(trx),
    );
    let refresh: Promise<unknown> | undefined;
    let manual: ReturnType<typeof post> | undefined;
    try {
      refresh = t.services.scores.recompute([agent], null, { keepOverrides: true });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      manual = post(t.app, `/api/agents/${agent}/score`, { score: 900, reason: '0x01' });
      // The client's write waits for the refresh's transaction (before, it went through at once).
      let answered = false;
      void manual.then(() => {
        answered = true;
      });
      await until(async () => answered || (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await ledger.release();
    }
    await refresh;
    expect((await manual)?.statusCode).toBe(200);
    expect(await scoreOf(agent)).toBe(900);
    expect((await history(agent)).at(-1)).toMatchObject({ new_score: 900, source: 'manual' });
  });

  it('a refresh and a transaction being recorded for the same agent both go through', async () => {
    const agent = await createAgent(t.app);
    await recordTx(t.app, agent, { amount: (10n ** 18n).toString() });
    await until(async () => (await scoreOf(agent)) === SEEDED_SCORE, 10_000, 20);
    // A score the model will change, with no history: the refresh below has a row to write.
    await t.database.db.updateTable('agents').set({ score: 1 }).where('address', '=', agent).execute();

    // A record does what this transaction does, in this order: its row refers to the agent (a
    // KEY SHARE lock on the agent's row), then it touches the agent's row.
    const touch = latch();
    const referred = latch();
    const recording = t.database.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('transactions')
        .values({
          agent,
          tx_hash: `0x${'ab'.repeat(32)}`,
          amount: '1',
          asset: '',
          type: 0,
          success: true,
          occurred_at: t.clock.now,
          recorded_at: t.clock.now,
          chain_status: 'unverified',
        })
        .execute();
      referred.open();
      await touch.opened;
      await trx.updateTable('agents').set({ updated_at: t.clock.now }).where('address', '=', agent).execute();
    });
    await referred.opened;
    let settled = false;
    const refresh = t.services.scores.recompute([agent], null, { keepOverrides: true }).finally(() => {
      settled = true;
    });
    // The refresh ends, or waits for a lock. Its score write must not wait for the record's
    // reference while holding the lock the record's touch needs (PostgreSQL would end one of them).
    await until(async () => settled || (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
    touch.open();
    await expect(recording).resolves.toBeUndefined();
    expect(await refresh).toEqual({ scored: 1, updated: 1 });
    expect(await scoreOf(agent)).toBe(SEEDED_SCORE);
  });

  it('one batch job delivered twice at once is applied once', async () => {
    const a = await createAgent(t.app);
    const entries = [{ address: a, score: 654, reason: '0xbb' }];
    // Both deliveries find nothing applied yet if they read before either writes: the agent's row is held.
    const row = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM agents WHERE address = ${a} FOR UPDATE`.execute(trx),
    );
    let both: Promise<unknown> | undefined;
    try {
      both = Promise.all([
        t.services.scores.applyBatch(entries, 'job-twice-at-once', systemActor()),
        t.services.scores.applyBatch(entries, 'job-twice-at-once', systemActor()),
      ]);
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await row.release();
    }
    await both;
    expect(await history(a)).toEqual([{ old_score: 0, new_score: 654, source: 'batch', reason: '0xbb' }]);
  });
});

describe('housekeeping', () => {
  it('purges expired idempotency keys on a schedule and keeps live ones', async () => {
    const ctx = await createTestApp({ env: { IDEMPOTENCY_PURGE_INTERVAL_MS: '50' } });
    try {
      const now = ctx.clock.now.getTime();
      const row = (key: string, expiresAt: Date) => ({
        scope: 'POST /test',
        key,
        request_hash: 'h',
        organization_id: 'default',
        status_code: 200,
        response: '{}',
        created_at: new Date(now),
        expires_at: expiresAt,
      });
      await ctx.database.db
        .insertInto('idempotency_keys')
        // Around the app's clock, which stands where the app was created: real time has moved on
        // since, by more than a second on a slow machine.
        .values([row('expired', new Date(now - 1000)), row('live', new Date(now + 86_400_000))])
        .execute();
      const keys = async () =>
        (await ctx.database.db.selectFrom('idempotency_keys').select('key').where('scope', '=', 'POST /test').execute())
          .map((r) => r.key)
          .sort();
      await expect.poll(keys, { timeout: 5000 }).toEqual(['live']);
    } finally {
      await ctx.close();
    }
  });
});

describe('waiting for a job', () => {
  it('answers 202 with the job id when the job outlasts the wait, and GET /api/jobs/:id gives the result later', async () => {
    const ctx = await createTestApp({
      jobs: 'in-process',
      waitMs: 50,
      processors: (real) => ({
        ...real,
        'scores.batch': async (payload: Parameters<Processors['scores.batch']>[0], jobCtx: JobContext) => {
          await new Promise((resolve) => setTimeout(resolve, 300));
          return real['scores.batch'](payload, jobCtx);
        },
      }),
    });
    try {
      const agent = await createAgent(ctx.app);
      const res = await post(ctx.app, '/api/agents/batch-scores', { agents: [agent], scores: [777], reasons: ['0x'] });
      expect(res.statusCode).toBe(202);
      const { jobId, status } = res.json().data;
      expect(['waiting', 'active']).toContain(status);
      expect(res.headers.location).toBe(`/api/jobs/${jobId}`);
      expect(res.headers['x-job-id']).toBe(jobId);
      let job = (await get(ctx.app, `/api/jobs/${jobId}`)).json().data;
      for (let i = 0; i < 50 && job.status !== 'completed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        job = (await get(ctx.app, `/api/jobs/${jobId}`)).json().data;
      }
      expect(job).toMatchObject({ id: jobId, name: jobs.batchScores.name, status: 'completed', progress: 100 });
      expect(job.result).toEqual({ updated: 1, agents: [{ address: agent, score: 777, grade: 'BBB' }] });
      // Unix seconds, like every other time the API gives.
      const now = Math.floor(Date.now() / 1000);
      expect(job.createdAt).toBeGreaterThanOrEqual(now - 60);
      expect(job.createdAt).toBeLessThanOrEqual(now);
      expect(job.finishedAt).toBeGreaterThanOrEqual(job.createdAt);
      expect(job.finishedAt).toBeLessThanOrEqual(now);
    } finally {
      await ctx.close();
    }
  });

  it('404s for an unknown job', async () => {
    const res = await get(t.app, '/api/jobs/scores-00000000-0000-0000-0000-000000000000');
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('JOB_NOT_FOUND');
  });
});
