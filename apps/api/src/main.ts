import { hostname } from 'node:os';
import { checksOptions, databaseOptions, disablePretenuring } from '@vouch/config';
import { createReadCache, createServices } from '@vouch/core';
import { createDatabase, migrateToLatest } from '@vouch/db';
import { concurrencyFrom, createBullmqRunner, createInProcessRunner, type JobRunner, queueNames } from '@vouch/jobs';
import { createProcessors, startWorkers, type WorkerManager } from '@vouch/worker';
import type { Queue } from 'bullmq';
import pino from 'pino';
import { buildApp } from './app.ts';
import { loadApiConfig } from './config.ts';
import { edgeDeps } from './edge-config.ts';

const config = loadApiConfig();
disablePretenuring();
const logger = pino({
  level: config.LOG_LEVEL,
  base: { pid: process.pid, role: config.VOUCH_ROLE },
  redact: ['req.headers.authorization', 'req.headers.cookie'],
});
const workerId = `${hostname()}:${process.pid}`;

const database = createDatabase({
  ...databaseOptions(config, 'vouch-api'),
  onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
});
logger.info(
  { driver: database.driver, dataDir: database.driver === 'pglite' ? config.DATA_DIR : undefined },
  'database configured',
);
if (config.MIGRATE_ON_START || database.driver === 'pglite') await migrateToLatest(database.db);
const coreOptions = { db: database.db, ...checksOptions(config) };

// Jobs: BullMQ when Redis is configured, otherwise the in-process runner with the same processors.
const onBackgroundError = (err: unknown, context: Record<string, unknown>) =>
  logger.warn({ err, ...context }, 'background job could not be scheduled');
let jobs: JobRunner;
let queues: Queue[] | undefined;
let workers: WorkerManager | undefined;
if (config.REDIS_URL) {
  const bullmq = createBullmqRunner({
    redisUrl: config.REDIS_URL,
    prefix: config.BULLMQ_PREFIX,
    waitMs: config.JOB_WAIT_TIMEOUT_MS,
    onError: (err) => logger.warn({ err }, 'job queue connection error'),
  });
  jobs = bullmq;
  queues = [...bullmq.queues.values()];
  if (config.VOUCH_ROLE === 'all') {
    workers = startWorkers({
      redisUrl: config.REDIS_URL,
      prefix: config.BULLMQ_PREFIX,
      queues: queueNames,
      concurrency: concurrencyFrom(process.env, config.WORKER_CONCURRENCY),
      processors: createProcessors(createServices(coreOptions), workerId),
      logger: logger.child({ component: 'worker' }),
    });
  }
} else {
  const processorServices = createServices(coreOptions);
  jobs = createInProcessRunner({
    processors: createProcessors(processorServices, workerId),
    concurrency: concurrencyFrom(process.env, config.WORKER_CONCURRENCY),
    waitMs: config.JOB_WAIT_TIMEOUT_MS,
    onError: (err, info) => logger.error({ err, jobId: info.id, jobName: info.name }, 'job failed'),
  });
}
logger.info({ jobs: jobs.kind, inProcessWorker: workers !== undefined }, 'jobs configured');
if (!config.CHAIN_RPC_URL)
  logger.warn('CHAIN_RPC_URL is unset: the chain checks of a verification fail with "no chain configured"');

// Scores and budget rows are cached per process; database notifications keep every replica's copy fresh.
const cache = config.CACHE_READS ? await createReadCache(database) : undefined;
const services = createServices({
  ...coreOptions,
  cache,
  jobs,
  recomputeChunkSize: config.RECOMPUTE_CHUNK_SIZE,
  onBackgroundError,
});
// The bundled OFAC snapshot is loaded on first start; later snapshots come from `npm run sanctions:import`.
const loaded = await services.sanctions.ensureBundled();
if (loaded) logger.info({ entries: loaded.entries, snapshotDate: loaded.snapshotDate }, 'sanctions snapshot loaded');

const edge = edgeDeps(config);
if (edge.auth.mode === 'off') {
  logger.warn(
    'AUTH is off: every API route is open to anyone who can reach this port (set AUTH=on and ADMIN_API_KEY to require API keys)',
  );
}
logger.info(
  { auth: edge.auth.mode, rateLimit: edge.rateLimit ? (config.REDIS_URL ? 'redis' : 'memory') : 'off' },
  'edge configured',
);
const app = await buildApp({
  services,
  logger,
  trustProxy: config.TRUST_PROXY,
  bodyLimit: config.BODY_LIMIT_BYTES,
  coalesceWrites: config.COALESCE_WRITES,
  queues,
  database,
  jobs,
  ...edge,
});

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  logger.info({ signal }, 'shutting down');
  const deadline = setTimeout(() => {
    logger.error('shutdown deadline passed; exiting');
    process.exit(1);
  }, config.SHUTDOWN_TIMEOUT_MS + 1000);
  deadline.unref();
  try {
    await app.close(); // stop accepting, finish in-flight requests
    await workers?.close(config.SHUTDOWN_TIMEOUT_MS);
    await jobs.close();
    await cache?.close();
    await database.close();
    process.exit(0);
  } catch (err) {
    logger.error({ err }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

await app.listen({ port: config.PORT, host: config.HOST });
