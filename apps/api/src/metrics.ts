import type { QueueReports } from '@vouch/jobs';
import type { Queue } from 'bullmq';
import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface MetricsOptions {
  /** BullMQ queues: job counts by state and durations of finished jobs. */
  queues?: Queue[] | undefined;
  /** Workers per queue (readiness.ts `queueReporter`: cached, bounded in time); with `queues`. */
  queueReports?: () => Promise<Partial<QueueReports>>;
  /** The pg pool (absent for PGlite). */
  pool?: pg.Pool | undefined;
  /** Process metrics (CPU, memory, event loop, GC); tests that build many apps turn them off. */
  defaultMetrics?: boolean;
}

export interface Metrics {
  registry: Registry;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
/** A collection that needs Redis gives up after this long, so a scrape never hangs. */
const COLLECT_TIMEOUT_MS = 1000;
/** Finished jobs read per queue and state per scrape, newest first. */
const SAMPLE_PAGE = 200;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Prometheus metrics of one app, in a registry of its own (tests build many apps).
 * Job figures come from the queues in Redis, so every API replica reports the same,
 * queue-wide numbers: aggregate them across replicas with max(), not sum().
 */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });

  const pool = options.pool;
  if (pool) {
    new Gauge({
      name: 'vouch_db_pool_connections',
      help: 'PostgreSQL pool: connections open (total), idle, and requests waiting for one',
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
    new Gauge({
      name: 'vouch_db_pool_max',
      help: 'PostgreSQL pool: most connections allowed',
      registers,
      collect() {
        this.set(pool.options.max ?? 10);
      },
    });
  }

  const queues = options.queues ?? [];
  if (queues.length) {
    new Gauge({
      name: 'vouch_jobs',
      help: 'Jobs in each queue by state (queue-wide, read from Redis at scrape time)',
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        this.reset();
        await Promise.all(
          queues.map(async (queue) => {
            const counts = await withTimeout(queue.getJobCounts(...JOB_STATES), COLLECT_TIMEOUT_MS).catch(() => null);
            if (!counts) return;
            for (const state of JOB_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          }),
        );
      },
    });
    const reports = options.queueReports;
    if (reports) {
      new Gauge({
        name: 'vouch_queue_workers',
        help: 'BullMQ workers connected to each queue, from any process (read from Redis at scrape time)',
        labelNames: ['queue'] as const,
        registers,
        async collect() {
          this.reset();
          for (const [queue, report] of Object.entries(await reports())) {
            if (report?.workers !== undefined) this.set({ queue }, report.workers);
          }
        },
      });
    }
    // Durations of jobs that finished since the previous scrape (processing time, finishedOn − processedOn).
    const since = new Map<string, number>();
    const start = Date.now();
    let sampling: Promise<void> | undefined;
    const sample = (histogram: Histogram<'queue' | 'state'>) =>
      Promise.all(
        queues.flatMap((queue) =>
          (['completed', 'failed'] as const).map(async (state) => {
            const mark = `${queue.name}:${state}`;
            const after = since.get(mark) ?? start;
            const jobs = await withTimeout(queue.getJobs([state], 0, SAMPLE_PAGE - 1, false), COLLECT_TIMEOUT_MS).catch(
              () => [],
            );
            let newest = after;
            for (const job of jobs) {
              if (!job?.finishedOn || !job.processedOn || job.finishedOn <= after) continue;
              histogram.observe({ queue: queue.name, state }, (job.finishedOn - job.processedOn) / 1000);
              newest = Math.max(newest, job.finishedOn);
            }
            since.set(mark, newest);
          }),
        ),
      ).then(() => undefined);
    new Histogram({
      name: 'vouch_job_duration_seconds',
      help: 'Processing time of finished jobs by queue and outcome, sampled from Redis at scrape time',
      labelNames: ['queue', 'state'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
      collect() {
        // Scrapes at once (a pair of Prometheus servers) share one pass: each would otherwise read
        // the same marks and observe the same jobs again.
        sampling ??= sample(this).finally(() => {
          sampling = undefined;
        });
        return sampling;
      },
    });
  }

  // The label children of each (method, route, status), resolved once: prom-client would
  // otherwise hash the label set on every request.
  type Labels = 'method' | 'route' | 'status';
  const series = new Map<string, { count: Counter.Internal; time: Histogram.Internal<Labels> }>();
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const key = `${method} ${status} ${route}`;
      let one = series.get(key);
      if (!one) {
        const labels = { method, route, status: String(status) };
        one = { count: requests.labels(labels), time: durations.labels(labels) };
        series.set(key, one);
      }
      one.count.inc();
      one.time.observe(seconds);
    },
  };
}
