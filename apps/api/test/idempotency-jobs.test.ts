import { sql } from '@vouch/db';
import type { Processors } from '@vouch/jobs';
import {
  bearer,
  bullmqApps,
  createAgent,
  createKey,
  createOrganizationKey,
  createTestApp,
  get,
  post,
  randomAddress,
  redisAvailable,
  type TestAppOptions,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// Idempotency-Key on a queued route (batch-scores): the answer is stored by the worker with the
// scores, a retry joins the first request's job, another request under the key is refused.

/** Score-history rows a batch wrote for the agent. */
async function batchRows(t: TestContext, agent: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM score_events WHERE agent = ${agent} AND source = 'batch'`.execute(t.database.db);
  return rows[0]?.n ?? 0;
}

const batch = (t: TestContext, key: string, agents: string[], scores: number[]) =>
  post(
    t.app,
    '/api/agents/batch-scores',
    { agents, scores, reasons: agents.map(() => '0x01') },
    { 'idempotency-key': key },
  );

describe('POST /api/agents/batch-scores under an Idempotency-Key', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('applies a batch once and answers a retry with the stored answer', async () => {
    const [a, b] = [await createAgent(t.app), await createAgent(t.app)];
    const first = await batch(t, 'batch-once', [a, b], [640, 710]);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.headers['idempotency-replayed']).toBeUndefined();
    // Another write in between: the replay answers what the batch answered, not the score now.
    expect((await post(t.app, `/api/agents/${a}/score`, { score: 100, reason: '0x02' })).statusCode).toBe(200);
    const again = await batch(t, 'batch-once', [a, b], [640, 710]);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(again.headers['x-job-id']).toBe(first.headers['x-job-id']);
    expect(await batchRows(t, a)).toBe(1);
    expect(await batchRows(t, b)).toBe(1);
    expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(100);
    // The key is the organization's and the route's: a set score under the same key is another request.
    expect(
      (await post(t.app, `/api/agents/${a}/score`, { score: 300, reason: '0x03' }, { 'idempotency-key': 'batch-once' }))
        .statusCode,
    ).toBe(200);
  });

  it('refuses another batch under a used key (422), writing nothing', async () => {
    const a = await createAgent(t.app);
    expect((await batch(t, 'batch-reused', [a], [500])).statusCode).toBe(200);
    const other = await batch(t, 'batch-reused', [a], [900]);
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(500);
    expect(await batchRows(t, a)).toBe(1);
  });

  it('keeps a refusal made before the job was queued, and replays it', async () => {
    const known = await createAgent(t.app);
    const unknown = randomAddress();
    const refused = await batch(t, 'batch-refused', [known, unknown], [400, 400]);
    expect(refused.statusCode).toBe(404);
    expect(refused.json().error.code).toBe('AGENT_NOT_FOUND');
    await createAgent(t.app, { address: unknown });
    const again = await batch(t, 'batch-refused', [known, unknown], [400, 400]);
    expect(again.statusCode).toBe(404);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.json().error.code).toBe('AGENT_NOT_FOUND');
    expect(await batchRows(t, known)).toBe(0);
    // Bad input is not an answer: it is refused again as it is, and stores nothing.
    const bad = await batch(t, 'batch-bad', [known, known], [1, 2]);
    expect(bad.statusCode).toBe(400);
    expect((await batch(t, 'batch-bad', [known], [1])).statusCode).toBe(200);
  });
});

/** The real batch, started only once `release` is called. */
function gated() {
  let release!: () => void;
  const open = new Promise<void>((resolve) => {
    release = resolve;
  });
  let runs = 0;
  const processors = (real: Processors): Processors => ({
    ...real,
    'scores.batch': async (payload, ctx) => {
      runs++;
      await open;
      return real['scores.batch'](payload, ctx);
    },
  });
  return { processors, release: () => release(), runs: () => runs };
}

const hasRedis = await redisAvailable();
const bullmqHere = hasRedis && inject('testDbMode') === 'postgres';
const onBullmq = bullmqApps('idempotency-jobs');
afterAll(() => onBullmq.dropAll());

/** The app with the in-process runner, or on BullMQ (workers in this process) under a Redis prefix of its own. */
const appOn = (bullmq: boolean, options: TestAppOptions): Promise<TestContext> =>
  bullmq ? onBullmq.create(options) : createTestApp(options);

describe.each([
  ['in process', false],
  ['on BullMQ', true],
] as const)('a retry while the first request’s batch still runs (%s)', (_name, bullmq) => {
  const gate = gated();
  let t: TestContext;
  beforeAll(async () => {
    if (bullmq && !bullmqHere) return;
    t = await appOn(bullmq, { processors: gate.processors, waitMs: 100 });
  });
  afterAll(() => t?.close());

  it.runIf(!bullmq || bullmqHere)(
    'joins its job: one run, one write, the same job id',
    async () => {
      const a = await createAgent(t.app);
      const first = await batch(t, 'batch-running', [a], [820]);
      expect(first.statusCode).toBe(202);
      const retry = await batch(t, 'batch-running', [a], [820]);
      expect(retry.statusCode).toBe(202);
      expect(retry.json().data.jobId).toBe(first.json().data.jobId);
      // Another request under the key while the first runs: the key is claimed, so it is refused, never queued.
      const other = await batch(t, 'batch-running', [a], [10]);
      expect(other.statusCode).toBe(422);
      expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
      gate.release();
      await expect
        .poll(async () => (await get(t.app, `/api/jobs/${first.json().data.jobId}`)).json().data.status, {
          timeout: 10_000,
        })
        .toBe('completed');
      const replay = await batch(t, 'batch-running', [a], [820]);
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.json().data.agents).toEqual([{ address: a, score: 820, grade: expect.any(String) }]);
      expect(gate.runs()).toBe(1);
      expect(await batchRows(t, a)).toBe(1);
      expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(820);
    },
    30_000,
  );
});

/** What PostgreSQL throws for a statement past statement_timeout: the job fails as a dependency, 503. */
const busy = () => Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });

describe.each([
  ['in process', false],
  ['on BullMQ', true],
] as const)('a retry after the first request’s batch failed (%s)', (_name, bullmq) => {
  let failures = 3;
  let t: TestContext;
  beforeAll(async () => {
    if (bullmq && !bullmqHere) return;
    t = await appOn(bullmq, {
      // Every attempt of the first job fails (3, 1 s then 2 s apart); the job run again succeeds.
      processors: (real) => ({
        ...real,
        'scores.batch': async (payload, ctx) => {
          if (failures-- > 0) throw busy();
          return real['scores.batch'](payload, ctx);
        },
      }),
      waitMs: 15_000,
    });
  });
  afterAll(() => t?.close());

  it.runIf(!bullmq || bullmqHere)(
    'runs the batch again under the same key: the failure was no answer',
    async () => {
      const a = await createAgent(t.app);
      const first = await batch(t, 'batch-failed', [a], [555]);
      expect(first.statusCode, first.body).toBe(503);
      expect(await batchRows(t, a)).toBe(0);
      const retry = await batch(t, 'batch-failed', [a], [555]);
      expect(retry.statusCode, retry.body).toBe(200);
      expect(retry.headers['idempotency-replayed']).toBeUndefined();
      expect(retry.json().data.agents[0].score).toBe(555);
      expect(await batchRows(t, a)).toBe(1);
      const replay = await batch(t, 'batch-failed', [a], [555]);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.json()).toEqual(retry.json());
    },
    60_000,
  );
});

describe.each([
  ['in process', false],
  ['on BullMQ', true],
] as const)('a batch that failed for good after the first request was answered 202 (%s)', (_name, bullmq) => {
  let t: TestContext;
  beforeAll(async () => {
    if (bullmq && !bullmqHere) return;
    t = await appOn(bullmq, { waitMs: 100 });
    // The real batch fails in its own transaction (not a refusal, not a dependency) for reason 0xfa11.
    await sql`CREATE FUNCTION fail_marked_batch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'batch broken'; END $$`.execute(t.database.db);
    await sql`CREATE TRIGGER fail_marked_batch BEFORE INSERT ON score_events FOR EACH ROW
      WHEN (NEW.reason = '0xfa11') EXECUTE FUNCTION fail_marked_batch()`.execute(t.database.db);
  });
  afterAll(() => t?.close());

  it.runIf(!bullmq || bullmqHere)(
    'gives the claim up (docs/api.md): another request under the key is not refused',
    async () => {
      const a = await createAgent(t.app);
      const first = await post(
        t.app,
        '/api/agents/batch-scores',
        { agents: [a], scores: [300], reasons: ['0xfa11'] },
        { 'idempotency-key': 'batch-failed-late' },
      );
      expect(first.statusCode, first.body).toBe(202);
      await expect
        .poll(async () => (await get(t.app, `/api/jobs/${first.json().data.jobId}`)).json().data.status, {
          timeout: 15_000,
        })
        .toBe('failed');
      const other = await batch(t, 'batch-failed-late', [a], [400]);
      expect(other.statusCode, other.body).toBe(200);
      expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(400);
    },
    30_000,
  );
});

describe('the same request under a key that expired (24 h), its job still kept', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('is a new request: the batch is applied again, and what is answered is what is stored', async () => {
    const a = await createAgent(t.app);
    const first = await batch(t, 'batch-expired', [a], [640]);
    expect(first.statusCode, first.body).toBe(200);
    expect((await post(t.app, `/api/agents/${a}/score`, { score: 100, reason: '0x02' })).statusCode).toBe(200);
    t.clock.advance(25 * 3600 * 1000);
    const later = await batch(t, 'batch-expired', [a], [640]);
    expect(later.statusCode, later.body).toBe(200);
    expect(later.headers['idempotency-replayed']).toBeUndefined();
    expect(later.json().data.agents[0].score).toBe(640);
    // The answer said 640: so must the agent.
    expect((await get(t.app, `/api/agents/${a}/score`)).json().data.score).toBe(640);
    expect(await batchRows(t, a)).toBe(2);
    // And its answer is stored: a retry replays it.
    const replay = await batch(t, 'batch-expired', [a], [640]);
    expect(replay.headers['idempotency-replayed']).toBe('true');
  });
});

describe('a retry by another key of the organization while the first batch waits for its worker', () => {
  const ADMIN = 'idempotency-jobs-admin-0123456789abcdef';
  const gate = gated();
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      processors: gate.processors,
      waitMs: 100,
      edge: { auth: { mode: 'on', adminKey: ADMIN } },
    });
  });
  afterAll(() => t?.close());

  it('joins the job the first request queued: one answer, the batch applied', async () => {
    const alpha = await createOrganizationKey(t.app, ADMIN, 'alpha');
    // The operator acts in the default organization; so does this key of it.
    const scorer = await createKey(t.app, ADMIN, { name: 'default-scorer', scopes: ['read', 'score'] });
    const agent = randomAddress();
    expect((await post(t.app, '/api/agents/register', { address: agent }, bearer(alpha))).statusCode).toBe(201);
    const body = { agents: [agent], scores: [820], reasons: ['0x01'] };
    const first = await post(t.app, '/api/agents/batch-scores', body, {
      ...bearer(ADMIN),
      'idempotency-key': 'shared',
    });
    expect(first.statusCode, first.body).toBe(202);
    const retry = await post(t.app, '/api/agents/batch-scores', body, {
      ...bearer(scorer),
      'idempotency-key': 'shared',
    });
    // docs/api.md: a retry while the job runs waits for that job (202, the same job id), or its answer.
    const job = async () =>
      (await t.app.inject({ url: `/api/jobs/${first.json().data.jobId}`, headers: bearer(ADMIN) })).json().data;
    gate.release();
    await expect.poll(async () => (await job()).status, { timeout: 10_000 }).not.toBe('waiting');
    await expect.poll(async () => (await job()).status, { timeout: 10_000 }).not.toBe('active');
    expect(await job(), retry.body).toMatchObject({ status: 'completed' });
    await expect
      .poll(
        async () =>
          (await t.app.inject({ url: `/api/jobs/${first.json().data.jobId}`, headers: bearer(ADMIN) })).json().data
            .status,
        {
          timeout: 10_000,
        },
      )
      .toBe('completed');
    expect(retry.statusCode, retry.body).toBe(202);
    expect((await t.app.inject({ url: `/api/agents/${agent}/score`, headers: bearer(alpha) })).json().data.score).toBe(
      820,
    );
  }, 30_000);
});
