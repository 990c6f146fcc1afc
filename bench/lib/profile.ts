import { loadConfig, queueConcurrency } from '@vouch/config';

/** The product's defaults, from its one configuration module. */
const productDefaults = loadConfig({});

import { wholeNumberVar } from './env.ts';
export interface Profile {
  name: 'quick' | 'full';
  /** Seconds of unmeasured load before each measured load test. */
  warmupSec: number;
  /** Seconds of each measured load test. */
  durationSec: number;
  /** Connections (HTTP) / concurrency (pg) of the throughput scenarios: B1, P1, B2, P2, B3, P3. */
  connections: number;
  /** P4 and B5 (and the X- scenarios paced like them): requests per second, warm-up and measured request counts. */
  pacedRate: number;
  /** Operations back to back before the paced warm-up (closed-loop.ts warmUpPaced). */
  burstWarmup: number;
  pacedWarmup: number;
  pacedCount: number;
  /** Agents seeded and recomputed (B7, P5, P6). */
  agents: number;
  /** Untimed recomputations before the timed ones, and timed repetitions (median reported; P5 runs them before and again after P6). */
  recomputeWarmup: number;
  recomputeReps: number;
  /** Extra scenarios this profile leaves out (the quick one, for its time limit). */
  skipped: readonly string[];
  /** P3's overspend probe: budget of this many unit spends, hit by this many requests. */
  exhaustLimit: number;
  exhaustRequests: number;
}

/** BENCH_BURST_WARMUP overrides the back-to-back warm-up (0: only the paced one, as before it existed). */
const burstWarmup = (fallback: number) => wholeNumberVar('BENCH_BURST_WARMUP', fallback, 0);

export const profiles: Record<Profile['name'], Profile> = {
  quick: {
    name: 'quick',
    warmupSec: 2,
    durationSec: 5,
    connections: 50,
    pacedRate: 20,
    burstWarmup: burstWarmup(2000),
    pacedWarmup: 20,
    pacedCount: 120,
    agents: 10_000,
    recomputeWarmup: 1,
    recomputeReps: 5,
    skipped: ['X-B2-pool', 'X-B3-pool', 'X-hop-postgres', 'X-hop-redis'],
    exhaustLimit: 500,
    exhaustRequests: 1500,
  },
  full: {
    name: 'full',
    warmupSec: 5,
    durationSec: 20,
    connections: 50,
    pacedRate: 20,
    burstWarmup: burstWarmup(2000),
    pacedWarmup: 60,
    pacedCount: 600,
    agents: 10_000,
    recomputeWarmup: 1,
    recomputeReps: 5,
    skipped: [],
    exhaustLimit: 1000,
    exhaustRequests: 3000,
  },
};

/** Product settings the harness passes explicitly (each is the product's default unless overridden). */
export const productSettings = {
  /** DB_POOL_MAX of the API and of every worker process. */
  dbPoolMax: wholeNumberVar('BENCH_DB_POOL_MAX', productDefaults.DB_POOL_MAX, 1),
  /** WORKER_CONCURRENCY of every worker process. */
  workerConcurrency: wholeNumberVar('BENCH_WORKER_CONCURRENCY', productDefaults.WORKER_CONCURRENCY, 1),
  /** WORKER_CONCURRENCY_RECOMPUTE of every worker process: recomputation chunks at once (product default 1). */
  recomputeConcurrency: wholeNumberVar('BENCH_RECOMPUTE_CONCURRENCY', queueConcurrency(productDefaults).recompute, 1),
  /** RECOMPUTE_CHUNK_SIZE of the API. */
  recomputeChunkSize: productDefaults.RECOMPUTE_CHUNK_SIZE,
};
