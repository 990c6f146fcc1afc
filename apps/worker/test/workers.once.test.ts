import { type Services, systemActor } from '@vouch/core';
import type { Runtime } from '@vouch/runtime';
import {
  createTestDatabase,
  createTestRuntime,
  dropPrefix,
  redisAvailable,
  SEEDED_SCORE,
  type Spawned,
  seedScoredAgents,
  spawnBuilt,
  TEST_REDIS_URL,
  testPrefix,
} from '@vouch/testkit';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

// Real worker processes on the shared Redis and a Postgres database of this file's own.
const runnable = inject('testDbMode') === 'postgres' && (await redisAvailable());

async function waitForOutput(worker: Spawned, text: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!worker.output().includes(text)) {
    if (worker.child.exitCode !== null) throw new Error(`worker exited:\n${worker.output()}`);
    if (Date.now() > deadline) throw new Error(`worker did not say "${text}":\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.runIf(runnable)('two worker processes', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let prefix: string;
  let runtime: Runtime;
  let services: Services;
  let workers: Spawned[] = [];

  beforeEach(async () => {
    database = await createTestDatabase();
    prefix = testPrefix();
    // This process only produces (role api); the two worker processes run the jobs.
    runtime = await createTestRuntime(database, {
      role: 'api',
      env: {
        REDIS_URL: TEST_REDIS_URL,
        BULLMQ_PREFIX: prefix,
        JOB_WAIT_TIMEOUT_MS: '120000',
        HTTP_CONNECTION_TIMEOUT_MS: '121000',
        RECOMPUTE_CHUNK_SIZE: '50',
      },
    });
    services = runtime.services;
    workers = await Promise.all(
      [1, 2].map(() =>
        spawnBuilt('worker', {
          DATABASE_URL: database.url as string,
          REDIS_URL: TEST_REDIS_URL,
          BULLMQ_PREFIX: prefix,
          WORKER_CONCURRENCY: '2',
          WORKER_CONCURRENCY_RECOMPUTE: '2',
          LOG_LEVEL: 'debug',
          // A killed worker's jobs come back after the lock lapses.
          WORKER_LOCK_DURATION_MS: '2000',
          WORKER_STALLED_INTERVAL_MS: '1000',
        }),
      ),
    );
    await Promise.all(workers.map((w) => waitForOutput(w, 'workers started')));
  }, 90_000);

  afterEach(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await runtime?.close();
    await database?.close();
    await dropPrefix(prefix);
  });

  /** Exactly once in effect: one `model` history row per agent, and every score the model's. */
  async function expectEveryAgentScoredOnce(agents: string[]) {
    const perAgent = await database.db
      .selectFrom('score_events')
      .select(['agent', (eb) => eb.fn.countAll<string>().as('n')])
      .where('source', '=', 'model')
      .groupBy('agent')
      .execute();
    expect(perAgent).toHaveLength(agents.length);
    expect(perAgent.every((row) => Number(row.n) === 1)).toBe(true);
    const scores = await database.db.selectFrom('agents').select('score').distinct().execute();
    expect(scores).toEqual([{ score: SEEDED_SCORE }]);
  }

  it('share a 2,000-agent recompute and score every agent exactly once', async () => {
    const agents = await seedScoredAgents(database.db, 2000);
    const outcome = await services.scoring!.recompute(systemActor(), { all: true });
    expect(outcome.state).toBe('completed');
    if (outcome.state !== 'completed') return;
    expect(outcome.result).toMatchObject({ agents: 2000, chunks: 40, updated: 2000, unchanged: 0 });
    // Both processes took chunks.
    expect(outcome.result.workers).toHaveLength(2);
    await expectEveryAgentScoredOnce(agents);
  }, 120_000);

  it('finish a run whose other worker was SIGKILLed mid-way, with the right result', async () => {
    const agents = await seedScoredAgents(database.db, 4000);
    let finished = false;
    const run = services.scoring!.recompute(systemActor(), { all: true }).finally(() => {
      finished = true;
    });
    // Let the run get going, then kill one worker once it has completed a chunk and holds others.
    const [victim, survivor] = workers as [Spawned, Spawned];
    await waitForOutput(victim, '"jobName":"scores.recompute-chunk"', 60_000);
    victim.child.kill('SIGKILL');
    expect(finished).toBe(false);
    const outcome = await run;
    expect(outcome.state).toBe('completed');
    if (outcome.state !== 'completed') return;
    expect(outcome.result).toMatchObject({ agents: 4000, chunks: 80 });
    expect(outcome.result.updated + outcome.result.unchanged).toBe(4000);
    expect(survivor.child.exitCode).toBeNull();
    await expectEveryAgentScoredOnce(agents);
  }, 120_000);
});
