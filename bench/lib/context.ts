import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Database } from '@vouch/db';
import { queueNames } from '@vouch/jobs';
import { freePort, sleep, waitForHttp } from '@vouch/testkit';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { type CpuUsage, cpuMeter } from './cpu.ts';
import { REDIS_URL } from './infra.ts';
import { type Child, spawnApp } from './procs.ts';
import { type Profile, productSettings } from './profile.ts';

/** Seeded agents with a role in the scenarios. */
export interface Roles {
  /** P1/B2: whose score is read. */
  score: string;
  /** P2: budget checked. */
  check: string;
  /** P3: the hot budget spent on over HTTP. */
  spendHttp: string;
  /** B3: the hot budget spent on by plain SQL. */
  spendSql: string;
  /** P3's overspend probe. */
  exhaust: string;
  /** P8: whose payments are decided (a budget and a three-rule policy). */
  decide: string;
  /** P9: the hot budgets spent on by the APIs with events on and off. */
  spendEventsOn: string;
  spendEventsOff: string;
  /** P4: verified. */
  verify: string;
}

export interface Context {
  profile: Profile;
  logDir: string;
  dbName: string;
  dbUrl: string;
  prefix: string;
  /** The harness's own database handle (seeding, resets, checks). */
  database: Database;
  agents: string[];
  roles: Roles;
  /** Measured scenarios by id (B1, P1, …, and extras X-…). */
  scenarios: Record<string, Record<string, unknown>>;
  errors: Record<string, string>;
  /** pids per named group, for the CPU meter. */
  pids: Record<string, number[]>;
  /** The environment each Vouch process was started with (recorded in the results). */
  envs: Record<string, Record<string, string>>;
}

export interface RunningApi {
  proc: Child;
  base: string;
  env: Record<string, string>;
}

const CACHE_TRACE_MODULE = fileURLToPath(new URL('./cache-trace.mjs', import.meta.url));

/** The common environment of Vouch's processes under test. */
export function vouchEnv(ctx: Context): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATABASE_URL: ctx.dbUrl,
    REDIS_URL,
    BULLMQ_PREFIX: ctx.prefix,
    DB_POOL_MAX: String(productSettings.dbPoolMax),
  };
}

/** Starts the API (bundled, as `npm start` runs it) with VOUCH_ROLE=api (no worker inside), AUTH off, on a free port. */
export async function startApi(
  ctx: Context,
  name: string,
  options: {
    rateLimit: 'on' | 'off';
    coalesceWrites?: 'on' | 'off';
    /** Record every drop of the read cache to this file (bench/lib/cache-trace.mjs, preloaded). */
    cacheTrace?: string;
    /** Unset: the product's default (on); P9 compares on and off. */
    events?: 'on' | 'off';
    /** NODE_OPTIONS of the API process, e.g. `--cpu-prof --cpu-prof-dir=…` (bench/p8-apart.ts). */
    nodeOptions?: string;
  },
): Promise<RunningApi> {
  const port = await freePort();
  const env: Record<string, string> = {
    ...vouchEnv(ctx),
    VOUCH_ROLE: 'api',
    AUTH: 'off',
    HOST: '127.0.0.1',
    PORT: String(port),
    MIGRATE_ON_START: 'true',
    // Recomputations (P5/P6) answer 200 when done instead of 202 after 10 s; their connection
    // stays open while they wait.
    JOB_WAIT_TIMEOUT_MS: '600000',
    HTTP_CONNECTION_TIMEOUT_MS: '601000',
    RECOMPUTE_CHUNK_SIZE: String(productSettings.recomputeChunkSize),
    RATE_LIMIT: options.rateLimit,
    // Unset: the product's default (on); X-P2-uncoalesced turns it off.
    ...(options.coalesceWrites && { COALESCE_WRITES: options.coalesceWrites }),
    ...(options.nodeOptions && { NODE_OPTIONS: options.nodeOptions }),
    ...(options.cacheTrace && {
      NODE_OPTIONS: `--import=${pathToFileURL(CACHE_TRACE_MODULE).href}`,
      VOUCH_BENCH_CACHE_TRACE: options.cacheTrace,
    }),
    ...(options.events && { EVENTS: options.events }),
    // On but never refusing: every bucket far above what a run sends (P2).
    ...(options.rateLimit === 'on' && {
      RATE_LIMIT_DEFAULT: '1000000000',
      RATE_LIMIT_REGISTER: '1000000000',
      RATE_LIMIT_BATCH: '1000000000',
      RATE_LIMIT_COMPUTE: '1000000000',
    }),
  };
  ctx.envs[name] = env;
  const proc = await spawnApp(name, 'api', env, ctx.logDir);
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/health`, proc, 90_000);
  return { proc, base, env };
}

/** Starts the worker (bundled, as `npm run start:worker` runs it; all queues) and waits until its BullMQ workers are connected. */
export async function startWorker(ctx: Context, name: string): Promise<Child> {
  const counts = () => Promise.all(queueNames.map((queue) => workerCount(ctx.prefix, queue)));
  const before = await counts();
  const env = {
    ...vouchEnv(ctx),
    WORKER_CONCURRENCY: String(productSettings.workerConcurrency),
    WORKER_CONCURRENCY_RECOMPUTE: String(productSettings.recomputeConcurrency),
    SHUTDOWN_TIMEOUT_MS: '5000',
  };
  ctx.envs[name] = env;
  const proc = await spawnApp(name, 'worker', env, ctx.logDir);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`${name} exited at start; its output:\n${proc.output()}`);
    if ((await counts()).every((n, i) => n > (before[i] as number))) return proc;
    await sleep(100);
  }
  throw new Error(`${name} did not connect its workers within 60 s; its output:\n${proc.output()}`);
}

/** BullMQ workers connected to a queue (by Redis client name). */
export async function workerCount(prefix: string, queueName: string): Promise<number> {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const queue = new Queue(queueName, { connection, prefix });
  try {
    return await queue.getWorkersCount();
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

/** JSON request helper; throws on an unexpected status. */
export async function call<T = unknown>(
  base: string,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
  expect: number[] = [200],
): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as T) : (undefined as T);
  if (!expect.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return { status: res.status, body: parsed, headers: res.headers };
}

export type { CpuUsage };

/** Runs `fn` under the CPU meter (groups: the harness's known processes). */
export async function withCpu<T>(ctx: Context, fn: () => Promise<T>): Promise<{ result: T; cpu: CpuUsage }> {
  const meter = cpuMeter(() => ctx.pids);
  const result = await fn();
  return { result, cpu: meter.stop() };
}
