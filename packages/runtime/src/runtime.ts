import { hostname } from 'node:os';
import {
  type Config,
  ConfigError,
  checkApiConfig,
  checksOptions,
  databaseOptions,
  erc8004Options,
  eventsOptions,
  queueConcurrency,
  queueNames,
  scoreTransactions,
  workerQueues,
} from '@vouch/config';
import {
  type Clock,
  createProcessors,
  createReadCache,
  createServices,
  type ReadCache,
  type Services,
} from '@vouch/core';
import {
  createDatabase,
  type Database,
  isDatabaseBusy,
  isDatabaseUnavailable,
  lockDataDir,
  migrateToLatest,
} from '@vouch/db';
import {
  type BullmqWorkers,
  createBullmqRunner,
  createExecutor,
  createInProcessRunner,
  type Executor,
  type JobRunner,
  jobs as jobsRegistry,
  type Processors,
  startBullmqWorkers,
} from '@vouch/jobs';
import type { Queue } from 'bullmq';
import pino, { type Logger } from 'pino';

/**
 * What a process is:
 * - `all` (`npm start`): the API, and the jobs — in this process without Redis, or a BullMQ
 *   worker inside it with Redis;
 * - `api` (`npm run start:api`): the API; jobs go to Redis for worker processes;
 * - `worker` (`npm run start:worker`): BullMQ workers only (REDIS_URL and DATABASE_URL required);
 * - `cli`: a one-shot command (migrate, import); jobs, if any, run in this process.
 */
export type Role = 'all' | 'api' | 'worker' | 'cli';

/** Events past EVENTS_RETENTION_DAYS are deleted this often. */
const EVENTS_PURGE_INTERVAL_MS = 3_600_000;

export interface RuntimeOverrides {
  /** Default: the configuration's VOUCH_ROLE. */
  role?: Role;
  /** A database the caller owns (tests): used as is, not migrated, not closed. */
  database?: Database;
  clock?: Clock;
  logger?: Logger;
  /** Another job transport (tests); closed with the runtime. */
  jobs?: JobRunner;
  /** Replaces processors of the real set (tests that stall or fail jobs). */
  processors?: (real: Processors) => Processors;
  /** Delay before a score refresh after a recorded transaction (tests shorten or lengthen it). */
  refreshDelayMs?: number;
  /** Names this process in recomputation results. */
  workerId?: string;
  /** Migrate on start (default: MIGRATE_ON_START, always on the embedded database; never for `worker`). */
  migrate?: boolean;
  /** Load the bundled sanctions list when none is active (default: every role but `worker`). */
  loadSanctions?: boolean;
}

export interface Runtime {
  readonly config: Config;
  readonly role: Role;
  readonly logger: Logger;
  readonly database: Database;
  readonly services: Services;
  readonly jobs: JobRunner;
  /** BullMQ queues for the dashboard; empty with the in-process runner. */
  readonly queues: Queue[];
  /** BullMQ workers running in this process (roles `worker`, and `all` with Redis). */
  readonly workers: BullmqWorkers | undefined;
  readonly cache: ReadCache | undefined;
  /** Workers (bounded by SHUTDOWN_TIMEOUT_MS), job transport, cache, then the database. */
  close(): Promise<void>;
}

/**
 * The composition root: configuration → database → job transport → services → processors →
 * workers. The API, the worker, the CLIs, the tests and the benchmark all build their process
 * with it, so every process is wired the same way.
 */
export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const role = overrides.role ?? config.VOUCH_ROLE;
  if (role === 'all' || role === 'api') checkApiConfig(config);
  if (role === 'worker' && !config.REDIS_URL) {
    throw new ConfigError(
      'invalid configuration: REDIS_URL: required by a worker process, which takes its jobs from Redis',
    );
  }
  // Without it a worker would open an embedded database of its own, which nothing migrates, and
  // fail every job it takes from the deployment's queues.
  if (role === 'worker' && !config.DATABASE_URL && !overrides.database) {
    throw new ConfigError(
      "invalid configuration: DATABASE_URL: required by a worker process, which runs its jobs on the API's PostgreSQL",
    );
  }
  const logger =
    overrides.logger ??
    pino({
      level: config.LOG_LEVEL,
      base: { pid: process.pid, role },
      redact: ['req.headers.authorization', 'req.headers.cookie'],
    });
  const workerId = overrides.workerId ?? `${hostname()}:${process.pid}`;

  const database =
    overrides.database ??
    createDatabase({
      ...databaseOptions(config, `vouch-${role}`),
      onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
    });
  const ownsDatabase = overrides.database === undefined;
  const closers: Array<() => Promise<unknown>> = [];
  if (ownsDatabase) closers.push(() => database.close());
  try {
    // The embedded database is this process's alone: a second process on DATA_DIR is refused.
    if (ownsDatabase && database.driver === 'pglite' && !config.DATA_DIR.startsWith('memory://')) {
      const lock = await lockDataDir(config.DATA_DIR, role, (err) =>
        logger.error({ err }, 'the lock on DATA_DIR was lost; another process may open the embedded database'),
      );
      closers.push(() => lock.release());
    }
    if (ownsDatabase && role !== 'worker') {
      logger.info(
        { driver: database.driver, dataDir: database.driver === 'pglite' ? config.DATA_DIR : undefined },
        'database configured',
      );
      if (overrides.migrate ?? (config.MIGRATE_ON_START || database.driver === 'pglite')) {
        await migrateToLatest(database.db);
      }
    }

    // The transport is built before the processors it runs, which need the services, which need
    // the transport: the executor is bound once the processors exist.
    let execute: Executor | undefined;
    const bound: Executor = (request) => {
      if (!execute) throw new Error('job executor used before the runtime was built');
      return execute(request);
    };
    const concurrency = queueConcurrency(config);
    let jobs: JobRunner;
    let queues: Queue[] = [];
    if (overrides.jobs) {
      jobs = overrides.jobs;
    } else if (config.REDIS_URL && role !== 'cli') {
      const bullmq = createBullmqRunner({
        redisUrl: config.REDIS_URL,
        prefix: config.BULLMQ_PREFIX,
        waitMs: config.JOB_WAIT_TIMEOUT_MS,
        awaitResults: role !== 'worker',
        onError: (err) => logger.warn({ err }, 'job queue connection error'),
      });
      jobs = bullmq;
      queues = [...bullmq.queues.values()];
    } else {
      jobs = createInProcessRunner({
        execute: bound,
        concurrency,
        waitMs: config.JOB_WAIT_TIMEOUT_MS,
        onError: (err, info) => logger.error({ err, jobId: info.id, jobName: info.name }, 'job failed'),
      });
    }
    if (jobs.kind === 'in-process' && !overrides.jobs) {
      // As the BullMQ workers' close: running jobs get SHUTDOWN_TIMEOUT_MS, then the process goes on
      // closing (a restart forgets in-process jobs anyway).
      const inProcess = jobs;
      closers.unshift(async () => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'deadline'>((resolve) => {
          timer = setTimeout(() => resolve('deadline'), config.SHUTDOWN_TIMEOUT_MS);
        });
        const outcome = await Promise.race([inProcess.close().then(() => 'closed' as const), deadline]);
        clearTimeout(timer);
        if (outcome === 'deadline') {
          logger.warn({ deadlineMs: config.SHUTDOWN_TIMEOUT_MS }, 'jobs did not finish before the deadline');
        }
      });
    } else {
      closers.unshift(() => jobs.close());
    }

    // Scores and budget rows are cached per API process; database notifications keep every replica's copy fresh.
    const cache =
      config.CACHE_READS && (role === 'all' || role === 'api') ? await createReadCache(database) : undefined;
    if (cache) closers.unshift(() => cache.close());

    const services = createServices({
      db: database.db,
      clock: overrides.clock,
      jobs,
      cache,
      ...checksOptions(config),
      recomputeChunkSize: config.RECOMPUTE_CHUNK_SIZE,
      txFutureSkewMs: config.TX_FUTURE_SKEW_MS,
      approvalTtlMs: config.APPROVAL_TTL_MS,
      scoreTransactions: scoreTransactions(config),
      txRecheckIntervalMs: config.TX_RECHECK_INTERVAL_MS,
      erc8004: erc8004Options(config),
      events: eventsOptions(config),
      refreshDelayMs: overrides.refreshDelayMs,
      onBackgroundError: (err, context) => logger.warn({ err, ...context }, 'background job could not be scheduled'),
    });
    // Events are ordered by transaction id: a database whose ids went back (restored into another
    // server) would list new events before old ones and stop its webhooks. The API, which needs
    // its database at start anyway, refuses to start on one; a worker may start before its database.
    if (role === 'all' || role === 'api') await services.events.assertTransactionIdsAhead();
    const real = createProcessors(services, workerId);
    execute = createExecutor({
      processors: overrides.processors ? overrides.processors(real) : real,
      isUnavailable: isDatabaseUnavailable,
      isBusy: isDatabaseBusy,
    });

    let workers: BullmqWorkers | undefined;
    if (config.REDIS_URL && !overrides.jobs && (role === 'worker' || role === 'all')) {
      workers = startBullmqWorkers({
        redisUrl: config.REDIS_URL,
        prefix: config.BULLMQ_PREFIX,
        queues: role === 'worker' ? workerQueues(config) : queueNames,
        concurrency,
        execute,
        logger: role === 'worker' ? logger : logger.child({ component: 'worker' }),
        lockDurationMs: config.WORKER_LOCK_DURATION_MS,
        stalledIntervalMs: config.WORKER_STALLED_INTERVAL_MS,
        name: workerId,
      });
      closers.unshift(() => workers?.close(config.SHUTDOWN_TIMEOUT_MS) ?? Promise.resolve());
    }
    if (role !== 'worker') {
      logger.info({ jobs: jobs.kind, inProcessWorker: role === 'all' && workers !== undefined }, 'jobs configured');
    }
    if (!config.CHAIN_RPC_URL && role !== 'cli') {
      logger.warn(
        'CHAIN_RPC_URL is unset: the chain checks of a verification are not run, recorded transactions are self-reported (unverified), and ERC-8004 registries are not indexed',
      );
    }

    // Housekeeping: expired idempotency keys are purged on a schedule (one per deployment on BullMQ).
    if (role === 'all' || role === 'api') {
      await jobs
        .every(jobsRegistry.purgeIdempotency, {}, config.IDEMPOTENCY_PURGE_INTERVAL_MS)
        .catch((err) => logger.warn({ err }, 'the idempotency purge could not be scheduled; retried at next start'));
      // Holds past their time give back what they reserve.
      await jobs
        .every(jobsRegistry.expireHolds, {}, config.HOLD_SWEEP_INTERVAL_MS)
        .catch((err) => logger.warn({ err }, 'the expiry of holds could not be scheduled; retried at next start'));
      // Events: fanned out and stranded deliveries queued again on a schedule, whatever else
      // happens; old ones deleted hourly. With EVENTS off too: test deliveries, retries and
      // replays still make deliveries whose job may be lost.
      await jobs
        .every(jobsRegistry.sweepWebhooks, {}, config.WEBHOOK_SWEEP_INTERVAL_MS)
        .catch((err) => logger.warn({ err }, 'the webhook sweep could not be scheduled; retried at next start'));
      await jobs
        .every(jobsRegistry.purgeEvents, {}, EVENTS_PURGE_INTERVAL_MS)
        .catch((err) => logger.warn({ err }, 'the events purge could not be scheduled; retried at next start'));
      // Transactions whose check was lost (Redis away when recorded, a restart) or may still change.
      if (config.CHAIN_RPC_URL) {
        await jobs
          .every(jobsRegistry.recheckTransactions, {}, config.TX_RECHECK_INTERVAL_MS)
          .catch((err) =>
            logger.warn({ err }, 'the re-check of transactions could not be scheduled; retried at next start'),
          );
        // The ERC-8004 registries on that chain: identities and feedback, indexed block range by block range.
        await jobs
          .every(jobsRegistry.erc8004Index, {}, config.ERC8004_INTERVAL_MS)
          .catch((err) => logger.warn({ err }, 'the ERC-8004 indexer could not be scheduled; retried at next start'));
      }
    }

    // The bundled OFAC snapshot is loaded on first start; later snapshots come from `npm run sanctions:import`.
    if (overrides.loadSanctions ?? role !== 'worker') {
      const loaded = await services.sanctions.ensureBundled();
      if (loaded)
        logger.info({ entries: loaded.entries, snapshotDate: loaded.snapshotDate }, 'sanctions snapshot loaded');
      // An import stopped between activating its snapshot and re-scoring: finished now. Not fatal:
      // the next start or import tries again.
      await services.sanctions
        .finishRescore()
        .then((agents) => agents > 0 && logger.info({ agents }, 'finished the re-scoring a sanctions import owed'))
        .catch((err) =>
          logger.warn(
            { err },
            'the re-scoring a sanctions import owes failed; tried again at the next start or import',
          ),
        );
    }

    let closed: Promise<void> | undefined;
    return {
      config,
      role,
      logger,
      database,
      services,
      jobs,
      queues,
      workers,
      cache,
      close() {
        closed ??= (async () => {
          for (const close of closers) await close();
        })();
        return closed;
      },
    };
  } catch (error) {
    for (const close of closers) await close().catch(() => {});
    throw error;
  }
}
