import { type App, type AppDeps, appDeps, buildApp } from '@vouch/api';
import type { ConfigEnv } from '@vouch/config';
import { type Clock, createSanctionsService, type Services } from '@vouch/core';
import type { Database } from '@vouch/db';
import type { JobRunner, Processors } from '@vouch/jobs';
import { createRuntime, loadConfig, type Role, type Runtime, type RuntimeOverrides } from '@vouch/runtime';
import pino from 'pino';
import { createTestDatabase } from './db.ts';
import { dropPrefix, TEST_REDIS_URL, testPrefix } from './redis.ts';

export interface TestContext {
  app: App;
  database: Database;
  services: Services;
  runtime: Runtime;
  jobs: JobRunner;
  /** Moves the injected clock; starts at `start`. */
  clock: { now: Date; set(date: Date | string): void; advance(ms: number): void };
  close(): Promise<void>;
}

export interface TestAppOptions {
  start?: Date | string;
  poolMax?: number;
  /**
   * How long a request waits for a pool connection before it is a 503 (the product's
   * DB_CONNECTION_TIMEOUT_MS, 1 s). A test racing many requests on a loaded machine raises it
   * when what it checks is the race's outcome, not that wait.
   */
  connectionTimeoutMs?: number;
  /** PostgreSQL's statement_timeout for the app's connections (the product's DB_STATEMENT_TIMEOUT_MS, 15 s). */
  statementTimeoutMs?: number;
  /** Default: the in-process runner with the real processors (optionally replaced). */
  jobs?: 'in-process' | JobRunner | (() => JobRunner);
  processors?: (real: Processors) => Processors;
  waitMs?: number;
  chunkSize?: number;
  refreshDelayMs?: number;
  chainRpcUrl?: string;
  /** A read cache on the test database's notifications. */
  cache?: boolean;
  /** More settings, as an operator would set them. */
  env?: ConfigEnv;
  /** Default `api`; `all` with REDIS_URL in `env` also runs BullMQ workers in the test process. */
  role?: Role;
  /** Auth, rate limits, CORS and the like; by default auth and limits are off. */
  edge?: Partial<Omit<AppDeps, 'services' | 'database' | 'jobs'>>;
}

/** The real app on a real database, built by the same composition root as `npm start`, with a clock the test controls. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase({
    poolMax: options.poolMax,
    connectionTimeoutMs: options.connectionTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  const clock = {
    now: new Date(options.start ?? Date.now()),
    set(date: Date | string) {
      this.now = new Date(date);
    },
    advance(ms: number) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  const now: Clock = () => clock.now;
  const jobs =
    typeof options.jobs === 'function' ? options.jobs() : options.jobs === 'in-process' ? undefined : options.jobs;
  let runtime: Runtime;
  try {
    runtime = await createTestRuntime(database, {
      env: {
        CACHE_READS: options.cache ? 'on' : 'off',
        ...(options.waitMs !== undefined && { JOB_WAIT_TIMEOUT_MS: String(options.waitMs) }),
        ...(options.chunkSize !== undefined && { RECOMPUTE_CHUNK_SIZE: String(options.chunkSize) }),
        ...(options.chainRpcUrl !== undefined && { CHAIN_RPC_URL: options.chainRpcUrl }),
        ...options.env,
      },
      role: options.role ?? 'api',
      clock: now,
      ...(jobs && { jobs }),
      ...(options.processors && { processors: options.processors }),
      ...(options.refreshDelayMs !== undefined && { refreshDelayMs: options.refreshDelayMs }),
    });
  } catch (error) {
    await database.close();
    throw error;
  }
  const app = await buildApp(appDeps(runtime, { logger: undefined, defaultMetrics: false, ...options.edge }));
  await app.ready();
  return {
    app,
    database,
    services: runtime.services,
    runtime,
    jobs: runtime.jobs,
    clock,
    close: async () => {
      await app.close();
      await runtime.close();
      await database.close();
    },
  };
}

/**
 * Test apps on BullMQ (role `all`: workers in the test process), each under a Redis prefix of its
 * own (`vouch-<kind>-…-<n>`); `dropAll` deletes every key they left.
 */
export function bullmqApps(kind: string) {
  const prefix = testPrefix(kind);
  const used: string[] = [];
  return {
    create(options: TestAppOptions = {}): Promise<TestContext> {
      const own = `${prefix}-${used.length + 1}`;
      used.push(own);
      return createTestApp({
        ...options,
        role: 'all',
        env: { ...options.env, REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: own },
      });
    },
    async dropAll(): Promise<void> {
      for (const own of used) await dropPrefix(own);
    },
  };
}

/**
 * The runtime of a test on a database it owns: quiet, no rate limits, no read cache and the
 * in-process runner unless `env` says otherwise. Closing it leaves the database open.
 */
export function createTestRuntime(
  database: Database,
  options: { env?: ConfigEnv } & Omit<RuntimeOverrides, 'database'> = {},
): Promise<Runtime> {
  const { env, ...overrides } = options;
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', RATE_LIMIT: 'off', CACHE_READS: 'off', ...env });
  return createRuntime(config, {
    role: 'cli',
    logger: pino({ level: 'silent' }),
    workerId: 'test-in-process',
    ...overrides,
    database,
  });
}

/**
 * A test database with the bundled sanctions list active, for tests of one service on its own
 * (without the app): screening reads it as the service under test does.
 */
export async function createScreenedDatabase(clock: Clock): Promise<Database> {
  const database = await createTestDatabase();
  await createSanctionsService({ db: database.db, clock }).ensureBundled();
  return database;
}
