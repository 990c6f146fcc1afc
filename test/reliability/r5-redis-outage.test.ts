import { sql } from '@vouch/db';
import {
  type ApiProcess,
  alive,
  createTestDatabase,
  kill,
  type PersistentRedis,
  randomAddress,
  randomTxHash,
  SEEDED_SCORE,
  type Spawned,
  seedScoredAgents,
  sleep,
  startApi,
  startPersistentRedis,
  startWorker,
  until,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpClient, httpClient } from './support/http.ts';
import { expectJobsCompleted, expectProbes, type Probe, probeFor, slowest } from './support/probes.ts';
import { ms, report } from './support/report.ts';

// R5: the API and a worker as real processes on a disposable redis-server with AOF. Redis is
// stopped (SIGTERM) for 10 s with jobs acknowledged and still queued, then started again on
// the same port with the same data. While it is down, queue-backed endpoints answer 503 within
// 1 s and reads, checks and spends keep working; within 5 s of its return everything works
// again — the worker included — with no process restarted, and every job acknowledged before
// the stop completes, exactly once in effect.
const AGENTS = 10_000;
const OUTAGE_MS = 10_000;
const WAIT_MS = 1000;
const LIMITS = {
  RATE_LIMIT_DEFAULT: '1000000',
  RATE_LIMIT_REGISTER: '1000000',
  RATE_LIMIT_BATCH: '1000000',
  RATE_LIMIT_COMPUTE: '1000000',
};

describe('R5 — Redis stopped for 10 s, then started', () => {
  let redis: PersistentRedis;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let api: ApiProcess;
  let worker: Spawned;
  let client: HttpClient;
  let seeded: string[];

  beforeAll(async () => {
    redis = await startPersistentRedis();
    database = await createTestDatabase();
    seeded = await seedScoredAgents(database.db, AGENTS);
    const shared = { DATABASE_URL: database.url as string, REDIS_URL: redis.url, BULLMQ_PREFIX: 'r5' };
    api = await startApi({ ...shared, ...LIMITS, VOUCH_ROLE: 'api', JOB_WAIT_TIMEOUT_MS: String(WAIT_MS) });
    worker = await startWorker({
      ...shared,
      WORKER_CONCURRENCY: '1',
      WORKER_LOCK_DURATION_MS: '4000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      LOG_LEVEL: 'info',
    });
    client = httpClient(api.base, { sockets: 64 });
  });

  afterAll(async () => {
    client?.close();
    await kill(api?.spawned);
    await kill(worker);
    await redis?.destroy();
    await database?.close();
  });

  it('degrades to 503 for queued work only, recovers within 5 s without restarts, loses no acknowledged job', async () => {
    const pids = { api: api.spawned.child.pid, worker: worker.child.pid };
    expect((await client.get('/ready')).status).toBe(200);
    const agent = randomAddress();
    expect((await client.post('/api/agents/register', { address: agent })).status).toBe(201);
    expect(
      (await client.post(`/api/budgets/${agent}/set`, { dailyLimit: '1000000000', monthlyLimit: '1000000000' })).status,
    ).toBe(200);
    const batchAgents = Array.from({ length: 10 }, randomAddress);
    for (const a of batchAgents) expect((await client.post('/api/agents/register', { address: a })).status).toBe(201);

    // Work acknowledged before the stop: five full recomputations and ten batches queue up behind
    // one worker that takes one scores job at a time; verifications go through the checks queue.
    const acknowledged = await Promise.all([
      ...Array.from({ length: 5 }, () => client.post('/api/scores/recompute', { all: true }, {}, 30_000)),
      ...batchAgents.map((a, i) =>
        client.post('/api/agents/batch-scores', { agents: [a], scores: [100 + i], reasons: ['0x'] }, {}, 30_000),
      ),
      ...Array.from({ length: 5 }, () => client.post('/api/verify', { address: randomAddress() }, {}, 30_000)),
    ]);
    for (const a of acknowledged) expect([200, 202], JSON.stringify(a.body)).toContain(a.status);
    const pending = acknowledged.filter((a) => a.status === 202).map((a) => a.body.data.jobId as string);
    expect(pending.length).toBeGreaterThan(0);

    // Redis goes away.
    await redis.stop('SIGTERM');
    const stoppedAt = performance.now();
    let tx = 0;
    const queued: Probe[] = [
      { name: 'POST /api/verify', send: (c) => c.post('/api/verify', { address: randomAddress() }), expect: [503] },
      {
        name: 'POST /api/verify/sanctions',
        send: (c) => c.post('/api/verify/sanctions', { address: agent }),
        expect: [503],
      },
      {
        name: 'POST /api/scores/anomaly-check',
        send: (c) => c.post('/api/scores/anomaly-check', { agent, amount: '5', type: 0 }),
        expect: [503],
      },
      {
        name: 'POST /api/agents/batch-scores',
        send: (c) => c.post('/api/agents/batch-scores', { agents: [agent], scores: [1], reasons: ['0x'] }),
        expect: [503],
      },
      {
        name: 'POST /api/scores/recompute',
        send: (c) => c.post('/api/scores/recompute', { agents: [agent] }),
        expect: [503],
      },
      { name: 'GET /api/jobs/:id', send: (c) => c.get(`/api/jobs/${pending[0]}`), expect: [503] },
      { name: 'GET /ready', send: (c) => c.get('/ready'), expect: [503] },
    ];
    const direct: Probe[] = [
      { name: 'GET /health', send: (c) => c.get('/health'), expect: [200] },
      { name: 'GET /api/agents/:address', send: (c) => c.get(`/api/agents/${agent}`), expect: [200] },
      { name: 'GET /api/budgets/:address', send: (c) => c.get(`/api/budgets/${agent}`), expect: [200] },
      { name: 'POST check', send: (c) => c.post(`/api/budgets/${agent}/check`, { amount: '1' }), expect: [200] },
      { name: 'POST spend', send: (c) => c.post(`/api/budgets/${agent}/spend`, { amount: '1' }), expect: [200] },
      {
        name: 'POST /api/transactions/record',
        send: (c) =>
          c.post('/api/transactions/record', { agent, txHash: randomTxHash(), amount: String(10n ** 18n), type: 0 }),
        expect: [201],
      },
      {
        name: 'POST /api/agents/register',
        send: (c) => c.post('/api/agents/register', { address: randomAddress() }),
        expect: [201],
      },
      { name: 'POST /api/scores/enrich', send: (c) => c.post('/api/scores/enrich', { agent }), expect: [200] },
    ];
    const down = await probeFor(client, [...queued, ...direct], OUTAGE_MS - (performance.now() - stoppedAt));
    tx = down.filter((l) => l.name === 'POST /api/transactions/record' && l.status === 201).length;
    expectProbes([...queued, ...direct], down, 1000);
    const downFor = performance.now() - stoppedAt;

    // Redis comes back with its data.
    await redis.start();
    const back = performance.now();
    const ready = until(async () => (await client.get('/ready')).status === 200, 5000, 100);
    const jobsReadable = until(async () => (await client.get(`/api/jobs/${pending[0]}`)).status === 200, 5000, 100);
    // A new verification completed by the worker: the whole path works again.
    const workerBack = until(
      async () => (await client.post('/api/verify', { address: randomAddress() })).status === 200,
      5000,
      100,
    );
    const [readyMs, jobsMs, workerMs] = await Promise.all([ready, jobsReadable, workerBack]);
    const recovered = performance.now() - back;
    expect(recovered).toBeLessThanOrEqual(5000);
    // Every queue-backed endpoint answers normally now.
    const after = await probeFor(
      client,
      queued.filter((p) => p.name !== 'GET /ready').map((p) => ({ ...p, expect: [200, 202] })),
      300,
    );
    expectProbes(
      queued.filter((p) => p.name !== 'GET /ready').map((p) => ({ ...p, expect: [200, 202] })),
      after,
      WAIT_MS + 1000,
    );

    // Every job acknowledged before the stop completes.
    const drainStarted = performance.now();
    await expectJobsCompleted(client, pending, 120_000);
    const drainMs = performance.now() - drainStarted;

    // Exactly once in effect: each seeded agent scored once by the model, each batch applied once.
    const model = await sql<{ agent: string; n: number }>`
      SELECT agent, count(*)::int AS n FROM score_events WHERE source = 'model' AND agent = ANY(${seeded}::text[])
      GROUP BY agent`.execute(database.db);
    expect(model.rows).toHaveLength(AGENTS);
    expect(model.rows.every((r) => r.n === 1)).toBe(true);
    const batches = await sql<{ agent: string; new_score: number }>`
      SELECT agent, new_score FROM score_events WHERE source = 'batch' AND agent = ANY(${batchAgents}::text[])
      ORDER BY agent`.execute(database.db);
    expect(batches.rows).toHaveLength(batchAgents.length);
    const scores = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM agents WHERE address = ANY(${seeded}::text[]) AND score = ${SEEDED_SCORE}`.execute(
      database.db,
    );
    expect(scores.rows[0]?.n).toBe(AGENTS);

    // Spends during the outage: every accepted answer is in the ledger, and the budget agrees.
    const spends200 = down.filter((l) => l.name === 'POST spend' && l.status === 200).length;
    const ledger = await sql<{ n: number; total: string }>`
      SELECT count(*)::int AS n, coalesce(sum(amount), 0)::text AS total FROM spends WHERE agent = ${agent} AND accepted`.execute(
      database.db,
    );
    const budget = await database.db
      .selectFrom('budgets')
      .selectAll()
      .where('agent', '=', agent)
      .executeTakeFirstOrThrow();
    expect(ledger.rows[0]).toEqual({ n: spends200, total: String(spends200) });
    expect(budget.daily_spent).toBe(String(spends200));

    // Transactions recorded while Redis was down still refreshed the agent's score once it was back.
    await until(
      async () => {
        const res = await client.get(`/api/scores/${agent}`);
        return res.body.data.score === res.body.data.currentScore && res.body.data.currentScore > 0;
      },
      10_000,
      200,
    );

    // No process was restarted, and the API said when the rate limiter lost and regained Redis.
    expect(alive(api.spawned) && alive(worker)).toBe(true);
    expect({ api: api.spawned.child.pid, worker: worker.child.pid }).toEqual(pids);
    expect(api.spawned.output()).toContain('rate limit store (Redis) unavailable');
    expect(api.spawned.output()).toContain('rate limit store (Redis) back');

    report('R5', {
      outageMs: ms(downFor),
      probesWhileDown: down.length,
      slowestWhileDownMs: slowest(down),
      recordsWhileDown: tx,
      spendsWhileDown: spends200,
      acknowledgedBeforeStop: acknowledged.length,
      pendingAtStop: pending.length,
      readyAfterMs: ms(readyMs),
      jobsReadableAfterMs: ms(jobsMs),
      workerBackAfterMs: ms(workerMs),
      drainMs: ms(drainMs),
    });
    await sleep(0);
  });
});
