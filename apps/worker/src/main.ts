import { hostname } from 'node:os';
import { checksOptions, databaseOptions, disablePretenuring } from '@vouch/config';
import { createServices } from '@vouch/core';
import { createDatabase } from '@vouch/db';
import pino from 'pino';
import { loadWorkerConfig } from './config.ts';
import { createProcessors } from './processors/index.ts';
import { startWorkers } from './worker-manager.ts';

const config = loadWorkerConfig();
disablePretenuring();
const logger = pino({ level: config.LOG_LEVEL, base: { pid: process.pid, role: 'worker' } });
const workerId = `${hostname()}:${process.pid}`;

const database = createDatabase({
  ...databaseOptions(config, 'vouch-worker'),
  onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
});
if (database.driver === 'pglite') {
  logger.warn('DATABASE_URL is unset: this worker uses its own embedded database, which the API cannot see');
}

const services = createServices({ db: database.db, ...checksOptions(config) });
const manager = startWorkers({
  redisUrl: config.REDIS_URL,
  prefix: config.BULLMQ_PREFIX,
  queues: config.queues,
  concurrency: config.concurrency,
  processors: createProcessors(services, workerId),
  logger,
  lockDurationMs: config.WORKER_LOCK_DURATION_MS,
  stalledIntervalMs: config.WORKER_STALLED_INTERVAL_MS,
});

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  logger.info({ signal }, 'shutting down: finishing active jobs');
  await manager.close(config.SHUTDOWN_TIMEOUT_MS);
  await database.close();
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
