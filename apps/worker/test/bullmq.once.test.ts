import { systemActor } from '@vouch/core';
import { type JobContext, jobs, type Processors } from '@vouch/jobs';
import {
  createAgent,
  createTestApp,
  dropPrefix,
  freePort,
  get,
  post,
  redisAvailable,
  TEST_REDIS_URL,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const hasRedis = await redisAvailable();

describe.runIf(hasRedis)('BullMQ transport on a real Redis', () => {
  const prefix = testPrefix();
  let t: TestContext;
  // While set, recomputation chunks wait for it before they run.
  let chunkGate: Promise<void> | null = null;
  // While set, a batch of score 999 waits for it: it outlasts the API's wait however fast the machine.
  let batchGate: Promise<void> | null = null;

  beforeAll(async () => {
    // The API with BullMQ workers in the same process (two jobs at a time on every queue).
    t = await createTestApp({
      role: 'all',
      env: {
        REDIS_URL: TEST_REDIS_URL,
        BULLMQ_PREFIX: prefix,
        // Long enough for an ungated job on a loaded machine; the 202 path is held by a gate.
        JOB_WAIT_TIMEOUT_MS: '2000',
        WORKER_CONCURRENCY: '2',
        WORKER_CONCURRENCY_RECOMPUTE: '2',
        SHUTDOWN_TIMEOUT_MS: '5000',
      },
      // Scores of 999 wait for batchGate, to exercise the 202 path.
      processors: (real): Processors => ({
        ...real,
        'scores.batch': async (payload: Parameters<Processors['scores.batch']>[0], ctx: JobContext) => {
          if (payload.entries[0]?.score === 999) await batchGate;
          return real['scores.batch'](payload, ctx);
        },
        'scores.recompute-chunk': async (
          payload: Parameters<Processors['scores.recompute-chunk']>[0],
          ctx: JobContext,
        ) => {
          await chunkGate;
          return real['scores.recompute-chunk'](payload, ctx);
        },
      }),
    });
  });

  /**
   * GET /api/jobs/:id until the job completes (at most 10 s); an answer without a job (a 503 while
   * Redis is slow to answer) is asked again. Returns the last answer's job, or the answer itself.
   */
  async function completed(jobId: string) {
    let body: { data?: { status?: string } } = {};
    for (let i = 0; i < 200; i++) {
      body = (await get(t.app, `/api/jobs/${jobId}`)).json();
      if (body.data?.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return body.data ?? body;
  }

  afterAll(async () => {
    await t?.close();
    await dropPrefix(prefix);
  });

  it('enqueues, lets a worker apply the batch and answers with the result', async () => {
    const agent = await createAgent(t.app);
    const res = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [640], reasons: ['0x0a'] });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ updated: 1, agents: [{ address: agent, score: 640, grade: 'B' }] });
    expect((await get(t.app, `/api/agents/${agent}/score`)).json().data.score).toBe(640);
  });

  it('answers 202 when the job outlasts the wait; the job id then yields the result', async () => {
    const agent = await createAgent(t.app);
    let release!: () => void;
    batchGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let res: Awaited<ReturnType<typeof post>>;
    try {
      res = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [999], reasons: ['0x'] });
    } finally {
      release();
      batchGate = null;
    }
    expect(res.statusCode).toBe(202);
    const job = await completed(res.json().data.jobId);
    expect(job).toMatchObject({ status: 'completed', progress: 100, result: { updated: 1 } });
    expect((await get(t.app, `/api/agents/${agent}/score`)).json().data.score).toBe(999);
  });

  it('runs a batch score while a recomputation holds every chunk slot, and then finishes the recomputation', async () => {
    const agents = await Promise.all(Array.from({ length: 4 }, () => createAgent(t.app)));
    let release!: () => void;
    chunkGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      // Four one-agent chunks on workers that run two at a time: two hold the slots, two wait.
      const recompute = await t.jobs?.runFlow(
        jobs.recompute,
        { agents: 4, chunks: 4 },
        agents.map((a) => ({ job: jobs.recomputeChunk, payload: { agents: [a] } })),
        { waitMs: 20 },
      );
      expect(recompute?.state).toBe('pending');
      const jobId = recompute?.state === 'pending' ? recompute.jobId : '';
      // On the queue the chunks shared with batches, this one would wait behind them (a 202).
      const batch = await post(t.app, '/api/agents/batch-scores', {
        agents: [agents[0]],
        scores: [640],
        reasons: ['0x'],
      });
      expect(batch.statusCode).toBe(200);
      expect((await get(t.app, `/api/jobs/${jobId}`)).json().data.status).toBe('waiting-children');
      release();
      const job = await completed(jobId);
      expect(job).toMatchObject({ status: 'completed', result: { agents: 4, chunks: 4 } });
    } finally {
      release();
      chunkGate = null;
    }
  });

  it('keeps a batch result readable through a burst of refreshes larger than what refreshes keep', async () => {
    const agent = await createAgent(t.app);
    const batch = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [300], reasons: ['0x'] });
    const jobId = batch.headers['x-job-id'] as string;
    expect(batch.statusCode).toBe(200);
    // More refreshes than a queue keeps of them (keepCount), all completed.
    const burst = jobs.refreshAgent.options.keepCount + 100;
    const ids = await Promise.all(
      Array.from({ length: burst }, (_, i) =>
        t.jobs.enqueue(jobs.refreshAgent, { agent: `0x${i.toString(16).padStart(40, '0')}` }),
      ),
    );
    await expect
      .poll(async () => (await get(t.app, `/api/jobs/${ids.at(-1)?.jobId}`)).json().data?.status, { timeout: 60_000 })
      .toBe('completed');
    const job = await get(t.app, `/api/jobs/${jobId}`);
    expect(job.statusCode).toBe(200);
    expect(job.json().data).toMatchObject({ status: 'completed', result: { updated: 1 } });
  }, 90_000);

  it('shows the queue dashboard read-only when auth is off and no admin key is set', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/admin/queues/api/queues' });
    expect(res.statusCode).toBe(200);
    const queues = (res.json() as { queues: Array<{ name: string; readOnlyMode: boolean }> }).queues;
    expect(queues.map((q) => q.name).sort()).toEqual([
      'checks',
      'maintenance',
      'recompute',
      'refresh',
      'scores',
      'webhooks',
    ]);
    expect(queues.every((q) => q.readOnlyMode)).toBe(true);
  });

  it('carries a domain refusal from the worker back to the caller', async () => {
    // Passes the API's check, then is unregistered behind its back: the worker refuses the whole batch.
    const agent = await createAgent(t.app);
    await t.database.db.updateTable('agents').set({ is_registered: false }).where('address', '=', agent).execute();
    const outcome = t.jobs.run(
      jobs.batchScores,
      { entries: [{ address: agent, score: 5, reason: '0x' }], actor: systemActor() },
      { waitMs: 5000 },
    );
    await expect(outcome).rejects.toMatchObject({ encoded: { code: 'AGENT_NOT_REGISTERED' } });
  });

  it('fails fast with 503 when the producer cannot reach Redis', async () => {
    const port = await freePort(); // nothing listens there
    const ctx = await createTestApp({
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, BULLMQ_PREFIX: prefix, JOB_WAIT_TIMEOUT_MS: '150' },
    });
    try {
      const agent = await createAgent(ctx.app);
      const res = await post(ctx.app, '/api/agents/batch-scores', { agents: [agent], scores: [1], reasons: ['0x'] });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('SERVICE_UNAVAILABLE');
      expect(res.headers['retry-after']).toBe('1');
      // Reads and spends do not depend on Redis.
      expect((await get(ctx.app, `/api/agents/${agent}`)).statusCode).toBe(200);
    } finally {
      await ctx.close();
    }
  });
});
