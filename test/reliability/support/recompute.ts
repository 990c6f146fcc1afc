import { type Services, systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { redisOptionsFromUrl } from '@vouch/jobs';
import {
  createTestDatabase,
  createTestRuntime,
  type DisposableRedis,
  kill,
  logLines,
  resetScores,
  SEEDED_SCORE,
  type Spawned,
  seedScoredAgents,
  startRedisServer,
  startWorker,
} from '@vouch/testkit';
import { Queue } from 'bullmq';
import { expect } from 'vitest';

/** A dead worker's job is redelivered at most this long after it died: its lock lapses, then a stall check runs. */
export const LOCK_MS = 2000;
export const STALLED_INTERVAL_MS = 1000;
export const STALL_MS = LOCK_MS + STALLED_INTERVAL_MS;

export interface RecomputeRig {
  database: Awaited<ReturnType<typeof createTestDatabase>>;
  services: Services;
  workers: Spawned[];
  agents: number;
  startWorker(extraEnv?: Record<string, string>): Promise<Spawned>;
  /** Back to every agent at 0 with no history, so a recomputation scores all of them again. */
  reset(): Promise<void>;
  /** Runs a full recomputation and returns its outcome and duration. */
  run(): Promise<{ ms: number; outcome: Awaited<ReturnType<NonNullable<Services['scoring']>['recompute']>> }>;
  /** Every agent has exactly one `model` history row and the model's score. */
  expectExactlyOnce(): Promise<void>;
  /** The chunk jobs of the runs since `since` (ms epoch), with how often each was started. */
  chunkJobs(since: number): Promise<Array<{ id: string; attemptsStarted: number; stalledCounter: number }>>;
  close(): Promise<void>;
}

/**
 * R3/R4: `agents` seeded agents on a database of the test's own, a disposable Redis,
 * worker processes (apps/worker/src/main.ts) with a short job lock, and a producer.
 */
export async function recomputeRig(opts: { agents: number; workers: number; env?: Record<string, string> }) {
  const redis: DisposableRedis = await startRedisServer();
  const database = await createTestDatabase();
  const prefix = 'vouch-r';
  const producer = await createTestRuntime(database, {
    role: 'api',
    env: {
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: prefix,
      JOB_WAIT_TIMEOUT_MS: '600000',
      HTTP_CONNECTION_TIMEOUT_MS: '601000',
    },
  });
  const services = producer.services;
  await seedScoredAgents(database.db, opts.agents);
  const queue = new Queue('recompute', { connection: redisOptionsFromUrl(redis.url), prefix });
  const workers: Spawned[] = [];

  const rig: RecomputeRig = {
    database,
    services,
    workers,
    agents: opts.agents,
    async startWorker(extraEnv = {}) {
      const worker = await startWorker({
        DATABASE_URL: database.url as string,
        REDIS_URL: redis.url,
        BULLMQ_PREFIX: prefix,
        WORKER_CONCURRENCY: '2',
        WORKER_CONCURRENCY_RECOMPUTE: '2',
        WORKER_LOCK_DURATION_MS: String(LOCK_MS),
        WORKER_STALLED_INTERVAL_MS: String(STALLED_INTERVAL_MS),
        ...opts.env,
        ...extraEnv,
      });
      workers.push(worker);
      return worker;
    },
    async reset() {
      await resetScores(database.db);
    },
    async run() {
      const started = performance.now();
      const outcome = await services.scoring?.recompute(systemActor(), { all: true });
      if (!outcome) throw new Error('no scoring service');
      return { ms: performance.now() - started, outcome };
    },
    async expectExactlyOnce() {
      const result = await sql<{ agents: number; once: number; scored: number }>`
        SELECT (SELECT count(*)::int FROM agents) AS agents,
               (SELECT count(*)::int FROM (
                  SELECT agent FROM score_events WHERE source = 'model' GROUP BY agent HAVING count(*) = 1) AS o) AS once,
               (SELECT count(*)::int FROM agents WHERE score = ${SEEDED_SCORE}) AS scored`.execute(database.db);
      const events = await sql<{ n: number }>`SELECT count(*)::int AS n FROM score_events`.execute(database.db);
      expect(result.rows[0]).toEqual({ agents: opts.agents, once: opts.agents, scored: opts.agents });
      expect(events.rows[0]?.n).toBe(opts.agents);
    },
    async chunkJobs(since) {
      const jobs = await queue.getJobs(['completed', 'failed', 'active', 'wait', 'delayed'], 0, -1);
      return jobs
        .filter((j) => j.name === 'scores.recompute-chunk' && j.timestamp >= since)
        .map((j) => ({ id: j.id as string, attemptsStarted: j.attemptsStarted, stalledCounter: j.stalledCounter }));
    },
    async close() {
      for (const w of workers) await kill(w);
      await queue.close();
      await producer.close();
      await database.close();
      await redis.kill();
    },
  };
  for (let i = 0; i < opts.workers; i++) await rig.startWorker();
  return rig;
}

/** The `job completed` log lines of chunk jobs, by job id, across processes. */
export function completionsByJob(processes: Spawned[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of processes) {
    for (const line of logLines(p)) {
      if (line.msg === 'job completed' && line.jobName === 'scores.recompute-chunk') {
        const id = String(line.jobId);
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
  }
  return counts;
}
