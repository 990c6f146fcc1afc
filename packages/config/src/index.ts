import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';

/**
 * The one place the environment is read: every setting of every process (API, worker, CLIs),
 * its type and its single default. `loadConfig()` parses the environment (`environment()`: the
 * process's, over a `.env` file where there is one) once and returns a frozen object; everything
 * else takes that object. `.env.example` lists the same keys.
 */

/** Every queue. Queue names never contain ':' or '-' (job ids are `<queue>-<uuid>`). */
export const queueNames = ['scores', 'checks', 'recompute', 'refresh', 'maintenance', 'webhooks'] as const;
export type QueueName = (typeof queueNames)[number];

/** Reads an optional env value; empty strings count as unset. */
export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/**
 * The largest number a setting may be: timers take at most 2^31 − 1 ms, and a larger delay fires at
 * once (every millisecond for an interval) instead of failing.
 */
const MAX_SETTING = 2_147_483_647;
/** A number setting; empty counts as unset (its default), not as 0. */
const numberSetting = <T extends z.ZodType<number | undefined>>(schema: T) =>
  optionalString.pipe(z.preprocess((v) => (v === undefined ? undefined : Number(v)), schema));
/** A whole number > 0; refuses `abc`, `1.5`, `0` and the like with a message naming the value. */
export const positiveInt = (fallback: number, max = MAX_SETTING) =>
  numberSetting(z.number().int().positive().max(max).default(fallback));
const nonNegative = (fallback: number) => numberSetting(z.number().nonnegative().max(MAX_SETTING).default(fallback));
const nonNegativeInt = (fallback: number, max = MAX_SETTING) =>
  numberSetting(z.number().int().nonnegative().max(max).default(fallback));
const onOff = (fallback: 'on' | 'off') =>
  optionalString.pipe(z.enum(['on', 'off']).default(fallback)).transform((v) => v === 'on');
const trueFalse = (fallback: 'true' | 'false') =>
  optionalString.pipe(z.enum(['true', 'false']).default(fallback)).transform((v) => v === 'true');
/** One of `values`; empty counts as unset (its default), not as a value refused. */
const choice = <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  optionalString.pipe(z.enum(values).default(fallback));
/** A text setting; empty counts as unset: `HOST=` would otherwise listen on every interface. */
const text = (fallback: string) => optionalString.pipe(z.string().default(fallback));
/** Unset falls back to another setting (`null` here, resolved by the reader). */
const optionalPositiveInt = optionalString
  .transform((v) => (v === undefined ? undefined : Number(v)))
  .pipe(z.number().int().positive().optional());

/** proxy-addr's named ranges, accepted by Fastify's trustProxy as well as addresses and CIDRs. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
function proxyEntryProblem(entry: string): string | null {
  if (PROXY_RANGES.has(entry)) return null;
  const [address, bits, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0)
    return `"${entry}" is not an IP address, a CIDR or loopback|linklocal|uniquelocal`;
  if (bits !== undefined) {
    const n = Number(bits);
    if (!/^\d+$/.test(bits) || n > (family === 4 ? 32 : 128)) return `"${entry}" has an invalid prefix length`;
  }
  return null;
}

/** Comma-separated trusted proxies. `true` (trust everyone) is refused: X-Forwarded-For would be anyone's to forge. */
const trustProxy = optionalString.superRefine((value, ctx) => {
  if (value === undefined) return;
  for (const entry of value.split(',').map((s) => s.trim())) {
    const problem = proxyEntryProblem(entry);
    if (problem) ctx.addIssue({ code: 'custom', message: `${problem}; list the proxies' addresses` });
  }
});

/**
 * Comma-separated origins, each written as a browser sends it in `Origin`, with which CORS compares
 * it as text: `https://app.example.com/` (a trailing slash) or `*` allowed nothing, silently.
 */
const originList = optionalString.superRefine((value, ctx) => {
  if (value === undefined) return;
  const bad = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry && (!URL.canParse(entry) || new URL(entry).origin !== entry));
  if (bad.length)
    ctx.addIssue({
      code: 'custom',
      message: `${bad.map((entry) => `"${entry}"`).join(', ')}: not an origin as a browser sends it (scheme://host[:port], lowercase, no path or trailing slash)`,
    });
});

const queueList = optionalString.superRefine((value, ctx) => {
  if (value === undefined) return;
  const named = value
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = named.filter((q) => !(queueNames as readonly string[]).includes(q));
  if (unknown.length)
    ctx.addIssue({ code: 'custom', message: `unknown queues ${unknown.join(', ')} (known: ${queueNames.join(', ')})` });
  // A worker process on no queue would take no job, silently.
  else if (!named.length) ctx.addIssue({ code: 'custom', message: `names no queue (known: ${queueNames.join(', ')})` });
});

/** A process still stopping this long past SHUTDOWN_TIMEOUT_MS exits anyway (startup.ts). */
export const SHUTDOWN_GRACE_MS = 1000;

/** Process and storage settings every role shares. */
const processEnv = {
  NODE_ENV: choice(['development', 'production', 'test'], 'development'),
  LOG_LEVEL: choice(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  /**
   * Deadline for a graceful stop of any process (API requests in flight, worker jobs running);
   * with the grace after it, still a time a timer holds (a longer one fires at once).
   */
  SHUTDOWN_TIMEOUT_MS: positiveInt(10_000, MAX_SETTING - SHUTDOWN_GRACE_MS),
};

const databaseEnv = {
  /**
   * A postgres:// or postgresql:// URL (a socket directory as `?host=`). pg reads anything else as
   * a path under a made-up host: `localhost:5432/vouch` was the database "432/vouch".
   */
  DATABASE_URL: optionalString.superRefine((value, ctx) => {
    if (value === undefined) return;
    if (!/^postgres(ql)?:\/\//.test(value) || !URL.canParse(value))
      ctx.addIssue({ code: 'custom', message: 'must be a postgres:// or postgresql:// URL' });
  }),
  DATA_DIR: text('./.data'),
  DB_POOL_MAX: positiveInt(10),
  DB_CONNECTION_TIMEOUT_MS: positiveInt(1000),
  /** A statement PostgreSQL runs longer than this is cancelled by the server. */
  DB_STATEMENT_TIMEOUT_MS: positiveInt(15_000),
  /** A query not answered within this long (a frozen server or network) fails with 503 and its connection is replaced. */
  DB_QUERY_TIMEOUT_MS: positiveInt(20_000),
  /** `off` for poolers that cannot carry named prepared statements (PgBouncer in transaction mode before 1.21). */
  DB_PREPARED_STATEMENTS: onOff('on'),
  MIGRATE_ON_START: trueFalse('true'),
};

/**
 * The most days a span counted back from now may cover (a verification's activity window, the
 * events' retention): about 274 years. Its start is a timestamp the database stores, which a
 * span of millions of days is not (years before 4713 BC, or before year 1 as the driver writes them).
 */
export const MAX_DAYS_BACK = 100_000;

/** Verification and anomaly thresholds and the chain; docs/checks.md. */
const checksEnv = {
  /** An http(s) JSON-RPC endpoint: the chain is read through viem's http transport. */
  CHAIN_RPC_URL: optionalString.superRefine((value, ctx) => {
    if (value === undefined) return;
    const url = URL.canParse(value) ? new URL(value) : null;
    if (!url || !['http:', 'https:'].includes(url.protocol) || !url.hostname)
      ctx.addIssue({ code: 'custom', message: 'must be an http:// or https:// URL of a JSON-RPC endpoint' });
  }),
  /** A chain read (bytecode, owner()) not answered within this long is given up: its check is not run. */
  CHAIN_TIMEOUT_MS: positiveInt(3000),
  VERIFY_MIN_AGE_DAYS: nonNegative(1),
  VERIFY_MIN_TRANSACTIONS: nonNegative(1),
  VERIFY_ACTIVITY_WINDOW_DAYS: positiveInt(30, MAX_DAYS_BACK),
  VERIFY_OWNER_STABLE_DAYS: nonNegative(7),
  VERIFY_MIN_SCORE: nonNegative(100),
  ANOMALY_DETECT_AT: nonNegative(50),
  ANOMALY_FREQUENCY_FLAG_RATIO: nonNegative(3),
  ANOMALY_VALUE_FLAG_RATIO: nonNegative(5),
  ANOMALY_FAILURE_FLAG_RATE: nonNegative(0.2),
};

const evmAddress = (fallback: string) =>
  optionalString
    .pipe(
      z
        .string()
        .regex(/^0x[0-9a-fA-F]{40}$/, 'must be an address: 0x and 40 hex digits')
        .default(fallback),
    )
    .transform((v) => v.toLowerCase());

/**
 * ERC-8004 registries, read by the indexer (`maintenance.erc8004-index`) from the chain at
 * CHAIN_RPC_URL, and the feedback Vouch gives there; docs/erc8004.md. The defaults are the
 * canonical v2.0.0 deployments (erc-8004/erc-8004-contracts).
 */
const erc8004Env = {
  ERC8004_IDENTITY_REGISTRY: evmAddress('0x8004A169FB4a3325136EB29fA0ceB6D2e539a432'),
  ERC8004_REPUTATION_REGISTRY: evmAddress('0x8004BAa17C55a88189AE136b182e5fdA19dE9b63'),
  /** The first block the indexer reads (at or before the registries' deployment). */
  ERC8004_START_BLOCK: nonNegativeInt(0, Number.MAX_SAFE_INTEGER),
  /** Blocks below the head that are left unindexed: a reorganization shallower than this changes nothing indexed. */
  ERC8004_CONFIRMATIONS: nonNegativeInt(12),
  /** Blocks per `eth_getLogs` request (providers cap the range). */
  ERC8004_BLOCK_RANGE: positiveInt(2000),
  /** How often the indexer runs. */
  ERC8004_INTERVAL_MS: positiveInt(30_000),
  /** A private key (0x and 64 hex digits) that sends the feedback Vouch gives; unset → feedback is only prepared. */
  ERC8004_SIGNER_KEY: optionalString.refine((v) => v === undefined || /^0x[0-9a-fA-F]{64}$/.test(v), {
    message: 'must be a private key: 0x and 64 hex digits',
  }),
  /** Public base URL of this API: feedback files are served under it; unset → the file travels as a data: URI. */
  ERC8004_FEEDBACK_BASE_URL: optionalString.refine(
    (v) => v === undefined || /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(v),
    {
      message: 'must be an http(s) URL without query or fragment',
    },
  ),
  /** Which feedback files (feedbackURI) the indexer fetches: `off`, `public` (https and http to public addresses), `any`. */
  ERC8004_FEEDBACK_FETCH: optionalString.pipe(z.enum(['off', 'public', 'any']).default('public')),
};

/** The transaction ledger; docs/api.md "Transactions". */
const ledgerEnv = {
  /** A recorded transaction may be dated at most this far in the future (clock skew); later is refused. */
  TX_FUTURE_SKEW_MS: positiveInt(300_000),
  /**
   * Which recorded transactions the score model counts: `verified` (only those the chain
   * confirmed) or `all` (as reported). Unset → `verified` with CHAIN_RPC_URL, else `all`.
   */
  SCORE_TRANSACTIONS: optionalString.pipe(z.enum(['verified', 'all']).optional()),
  /** How often transactions whose chain check is pending, not found or unreachable are looked at again. */
  TX_RECHECK_INTERVAL_MS: positiveInt(60_000),
};

/** The most agents one recomputation chunk job carries (its payload, packages/jobs/src/registry.ts). */
export const RECOMPUTE_CHUNK_MAX = 1000;

/** Queues and workers; docs/jobs.md. */
const jobsEnv = {
  REDIS_URL: optionalString.superRefine((value, ctx) => {
    if (value === undefined) return;
    const url = URL.canParse(value) ? new URL(value) : null;
    if (!url || !['redis:', 'rediss:'].includes(url.protocol) || !url.hostname || !/^\/?\d*$/.test(url.pathname))
      ctx.addIssue({
        code: 'custom',
        message: 'must be a redis:// or rediss:// URL with a host (and a database number)',
      });
  }),
  BULLMQ_PREFIX: text('vouch'),
  /** How long a request waits for its job before answering 202 with the job id. */
  JOB_WAIT_TIMEOUT_MS: positiveInt(10_000),
  /**
   * Agents per recomputation chunk: at most what a chunk job's payload takes (RECOMPUTE_CHUNK_MAX),
   * since a larger chunk fails its payload's check when queued and the recomputation answered 500.
   */
  RECOMPUTE_CHUNK_SIZE: positiveInt(250, RECOMPUTE_CHUNK_MAX),
  /** Comma-separated queues a worker process takes jobs from; unset → all. */
  WORKER_QUEUES: queueList,
  /** Jobs per queue a process runs at once, unless the queue's own setting says otherwise. */
  WORKER_CONCURRENCY: positiveInt(4),
  WORKER_CONCURRENCY_SCORES: optionalPositiveInt,
  WORKER_CONCURRENCY_CHECKS: optionalPositiveInt,
  WORKER_CONCURRENCY_REFRESH: optionalPositiveInt,
  /** Housekeeping jobs (purges) run one at a time. */
  WORKER_CONCURRENCY_MAINTENANCE: positiveInt(1),
  /** How long a review waits for its approval (and a hold reserved for it) before both expire. */
  /** Not a timer: up to 30 days, the longest a hold (which a review may reserve) lasts. */
  APPROVAL_TTL_MS: positiveInt(86_400_000, 30 * 86_400_000),
  /** How often holds past their time are expired and released (and pending approvals with them). */
  HOLD_SWEEP_INTERVAL_MS: positiveInt(5000),
  /**
   * Webhook deliveries at once per process: each mostly waits on the receiver (up to
   * WEBHOOK_TIMEOUT_MS), so more run at once than the other queues' jobs.
   */
  WORKER_CONCURRENCY_WEBHOOKS: positiveInt(16),
  /** How often expired idempotency keys (kept 24 h) are purged. */
  IDEMPOTENCY_PURGE_INTERVAL_MS: positiveInt(3_600_000),
  /**
   * A recomputation chunk is two bulk statements that keep a database core busy for their whole
   * run, so a process runs one at a time and a recomputation goes faster with more worker
   * processes (docs/jobs.md "Scaling").
   */
  WORKER_CONCURRENCY_RECOMPUTE: positiveInt(1),
  /**
   * How long a job's lock lasts (a live worker renews it every half); a killed worker's job is
   * taken again once its lock has lapsed and a stall check has run: within lock + interval, 5 s.
   */
  WORKER_LOCK_DURATION_MS: positiveInt(4000),
  WORKER_STALLED_INTERVAL_MS: positiveInt(1000),
};

/** Budget thresholds: whole percentages 1–100, each once; e.g. `80,100`. */
const percentList = optionalString
  .transform((v, ctx) => {
    if (v === undefined) return [80, 100];
    const parts = v.split(',').map((p) => p.trim());
    const values = parts.map(Number);
    const bad = parts.filter(
      (p, i) => !/^\d{1,3}$/.test(p) || (values[i] as number) < 1 || (values[i] as number) > 100,
    );
    if (bad.length || new Set(values).size !== values.length) {
      ctx.addIssue({ code: 'custom', message: 'must be distinct whole percentages from 1 to 100, comma-separated' });
      return z.NEVER;
    }
    return values.sort((a, b) => a - b);
  })
  .pipe(z.array(z.number()));

/** Events and webhooks; docs/events.md. */
const eventsEnv = {
  /** `off`: no event is written (the outbox, webhooks and GET /api/events stay empty); for comparisons. */
  EVENTS: onOff('on'),
  /** Percentages of a daily or monthly limit whose crossing is announced (budget.threshold), once per window each. */
  EVENTS_BUDGET_THRESHOLDS: percentList,
  /** Events (and their deliveries) older than this many days are deleted, hourly. */
  EVENTS_RETENTION_DAYS: positiveInt(30, MAX_DAYS_BACK),
  /** A delivery whose receiver has not answered within this long has failed (ms). */
  WEBHOOK_TIMEOUT_MS: positiveInt(10_000),
  /**
   * `on`: webhooks may target private, loopback and link-local addresses. Unset → off in
   * production, on elsewhere (a receiver on the same machine while developing).
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: optionalString.pipe(z.enum(['on', 'off']).optional()),
  /** An endpoint with no successful delivery since its first failure this long ago is disabled (ms; 5 days; no timer: up to a year). */
  WEBHOOK_DISABLE_AFTER_MS: positiveInt(5 * 86_400_000, 365 * 86_400_000),
  /** How often new events are fanned out and stranded deliveries queued again, whatever else happens (ms). */
  WEBHOOK_SWEEP_INTERVAL_MS: positiveInt(10_000),
  /** Endpoints an organization may have at once: each event is a delivery to every one of them. */
  WEBHOOKS_PER_ORGANIZATION: positiveInt(100, 10_000),
};

/** A host name: dot-separated labels of letters, digits, inner hyphens (and underscores, which /etc/hosts takes). */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/i;

/** The HTTP API and its edge (auth, limits, CORS); docs/edge.md. */
const apiEnv = {
  PORT: numberSetting(z.number().int().min(0).max(65535).default(3000)),
  /** An address (IPv6 without brackets) or a host name, without port or scheme: else listen fails naming no setting. */
  HOST: text('127.0.0.1').refine((v) => isIP(v) !== 0 || HOST_NAME.test(v), {
    message: 'must be an IP address (IPv6 without brackets) or a host name, without a port or a scheme',
  }),
  TRUST_PROXY: trustProxy,
  BODY_LIMIT_BYTES: positiveInt(1024 * 1024),
  /** A request (headers and body) must arrive within this long, or it is answered 408 and closed. */
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(30_000),
  /** A connection with no traffic for this long is closed. */
  HTTP_CONNECTION_TIMEOUT_MS: positiveInt(120_000),
  /** `all` (npm start): with REDIS_URL also runs a worker in this process; `api`: the API alone. */
  VOUCH_ROLE: choice(['all', 'api'], 'all'),
  /** Keep scores and budget rows in a per-process cache invalidated by database notifications. */
  CACHE_READS: onOff('on'),
  /** Write the answers finished in one event-loop turn together (docs/edge.md). */
  COALESCE_WRITES: onOff('on'),
  /** `on`: every API route needs a key with the right scope. Unset → on in production, off elsewhere. */
  AUTH: optionalString.pipe(z.enum(['on', 'off']).optional()),
  /** Acts as a key with the admin scope; required whenever AUTH is on. */
  ADMIN_API_KEY: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters',
  }),
  /** `off` disables rate limiting (benchmarks of the raw path). */
  RATE_LIMIT: onOff('on'),
  /** Requests per minute per client: every /api route not listed below. */
  RATE_LIMIT_DEFAULT: positiveInt(100),
  RATE_LIMIT_REGISTER: positiveInt(20),
  RATE_LIMIT_BATCH: positiveInt(10),
  RATE_LIMIT_COMPUTE: positiveInt(1000),
  /** Requests per minute shared by all the keys of one organization (an organization may have its own). */
  RATE_LIMIT_ORGANIZATION: positiveInt(1000),
  /** Comma-separated origins allowed by CORS; unset → no CORS headers (same-origin only). */
  CORS_ORIGINS: originList,
};

/** What PostgreSQL's cancel of a statement past its timeout may take to reach the client. */
const STATEMENT_CANCEL_MS = 250;

export const configSchema = z
  .object({
    ...processEnv,
    ...databaseEnv,
    ...checksEnv,
    ...erc8004Env,
    ...ledgerEnv,
    ...jobsEnv,
    ...eventsEnv,
    ...apiEnv,
  })
  .superRefine((config, ctx) => {
    // Nothing is verified without a chain: every score would lose its transactions.
    if (config.SCORE_TRANSACTIONS === 'verified' && !config.CHAIN_RPC_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['SCORE_TRANSACTIONS'],
        message: '"verified" needs CHAIN_RPC_URL (without a chain no transaction is verified)',
      });
    }
    // A statement the client gives up on keeps running on the server, holding what it locked,
    // after its request was answered 503: PostgreSQL must end a slow one first. PGlite has no
    // server and takes neither as such.
    if (config.DATABASE_URL && config.DB_STATEMENT_TIMEOUT_MS + STATEMENT_CANCEL_MS > config.DB_QUERY_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['DB_STATEMENT_TIMEOUT_MS'],
        message: `must be at least ${STATEMENT_CANCEL_MS} ms shorter than DB_QUERY_TIMEOUT_MS (${config.DB_QUERY_TIMEOUT_MS}), after which the client gives up on a query while the server goes on with it`,
      });
    }
    if (config.ERC8004_SIGNER_KEY && !config.CHAIN_RPC_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['ERC8004_SIGNER_KEY'],
        message: 'needs CHAIN_RPC_URL (the chain the feedback is sent to)',
      });
    }
  });

export type Config = Readonly<z.output<typeof configSchema>>;
/** The keys an operator sets, for tests and tools that build a configuration from parts. */
export type ConfigEnv = Partial<Record<keyof z.input<typeof configSchema>, string>>;

/** A bad setting: the message is one line naming every bad variable, meant to be printed as is. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The settings a process starts with: a `.env` file in `dir` (the working directory, where
 * `.env.example` says to copy it), under the process's own environment, which wins where both
 * name a key (a container's or a shell's setting is not overridden by a file left beside it).
 */
export function environment(dir = process.cwd(), env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  let text: string;
  try {
    text = readFileSync(join(dir, '.env'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new ConfigError(`invalid configuration: .env: cannot be read (${(error as Error).message})`);
  }
  return { ...parseEnv(text), ...env };
}

/** Parses the environment once; the result is frozen. */
export function loadConfig(env: NodeJS.ProcessEnv | ConfigEnv = environment()): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => {
      const key = String(i.path[0] ?? 'configuration');
      const given = (env as Record<string, string | undefined>)[key];
      const secret = key === 'ADMIN_API_KEY' || key === 'ERC8004_SIGNER_KEY' || key.endsWith('_URL');
      const shown = given === undefined || secret ? '' : ` (got "${given}")`;
      return `${key}: ${i.message}${shown}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return Object.freeze(result.data);
}

export function authMode(config: Pick<Config, 'AUTH' | 'NODE_ENV'>): 'on' | 'off' {
  return config.AUTH ?? (config.NODE_ENV === 'production' ? 'on' : 'off');
}

/**
 * A process that serves the API refuses to start with auth on (the production default) and
 * nobody able to administer keys. Workers serve no HTTP and do not need the key.
 */
export function checkApiConfig(config: Config): void {
  if (authMode(config) === 'on' && !config.ADMIN_API_KEY) {
    const why = config.AUTH === undefined ? ' (AUTH defaults to on when NODE_ENV=production)' : '';
    throw new ConfigError(
      `invalid configuration: ADMIN_API_KEY: required when AUTH is on${why}; set it to a secret of at least 16 characters, or set AUTH=off explicitly`,
    );
  }
  // A connection without traffic that long is closed, a request waiting for its job included: it
  // would get neither its result nor the 202 with its job's id, while the job goes on.
  if (config.JOB_WAIT_TIMEOUT_MS + JOB_WAIT_SETTLE_MS > config.HTTP_CONNECTION_TIMEOUT_MS) {
    throw new ConfigError(
      `invalid configuration: JOB_WAIT_TIMEOUT_MS: must be at least ${JOB_WAIT_SETTLE_MS} ms shorter than HTTP_CONNECTION_TIMEOUT_MS (${config.HTTP_CONNECTION_TIMEOUT_MS}), which closes a connection idle that long: a request waiting for its job would get no answer (got "${config.JOB_WAIT_TIMEOUT_MS}")`,
    );
  }
  if (config.NODE_ENV === 'production' && config.ADMIN_API_KEY) {
    const bits = secretBits(config.ADMIN_API_KEY);
    if (bits < MIN_ADMIN_KEY_BITS) {
      throw new ConfigError(
        `invalid configuration: ADMIN_API_KEY: too guessable for production (about ${Math.floor(bits)} bits, at least ${MIN_ADMIN_KEY_BITS} needed); use a random secret such as the output of \`openssl rand -hex 32\``,
      );
    }
  }
}

/** A request's wait for its job may last this long past JOB_WAIT_TIMEOUT_MS (its state read; docs/jobs.md "Waiting"). */
const JOB_WAIT_SETTLE_MS = 1000;

/** What an admin key must be worth in production: as much as 32 random hex digits. */
const MIN_ADMIN_KEY_BITS = 128;
/** And how many different characters it must use at least (`aaaa…` or `abab…` are not secrets). */
const MIN_ADMIN_KEY_DISTINCT = 10;

/**
 * A secret's strength as a random string would have it: its length times log2 of the alphabet
 * its character classes span (lowercase 26, uppercase 26, digits 10, others 33); 0 when it uses
 * fewer than MIN_ADMIN_KEY_DISTINCT different characters. An upper bound for a chosen phrase.
 */
export function secretBits(secret: string): number {
  if (new Set(secret).size < MIN_ADMIN_KEY_DISTINCT) return 0;
  const classes: Array<[RegExp, number]> = [
    [/[a-z]/, 26],
    [/[A-Z]/, 26],
    [/[0-9]/, 10],
    [/[^a-zA-Z0-9]/, 33],
  ];
  const alphabet = classes.reduce((n, [re, size]) => (re.test(secret) ? n + size : n), 0);
  return secret.length * Math.log2(alphabet);
}

/** Jobs of each queue one process runs at once. */
export function queueConcurrency(config: Config): Readonly<Record<QueueName, number>> {
  return {
    scores: config.WORKER_CONCURRENCY_SCORES ?? config.WORKER_CONCURRENCY,
    checks: config.WORKER_CONCURRENCY_CHECKS ?? config.WORKER_CONCURRENCY,
    recompute: config.WORKER_CONCURRENCY_RECOMPUTE,
    refresh: config.WORKER_CONCURRENCY_REFRESH ?? config.WORKER_CONCURRENCY,
    maintenance: config.WORKER_CONCURRENCY_MAINTENANCE,
    webhooks: config.WORKER_CONCURRENCY_WEBHOOKS,
  };
}

/** The queues a worker process takes jobs from, each once (a queue named twice would get two workers). */
export function workerQueues(config: Config): QueueName[] {
  if (!config.WORKER_QUEUES) return [...queueNames];
  const named = config.WORKER_QUEUES.split(',')
    .map((q) => q.trim())
    .filter(Boolean) as QueueName[];
  return [...new Set(named)];
}

/** The checks' settings in the shape the core services take. */
export function checksOptions(config: Config) {
  return {
    chainRpcUrl: config.CHAIN_RPC_URL,
    chainTimeoutMs: config.CHAIN_TIMEOUT_MS,
    verification: {
      minAgeDays: config.VERIFY_MIN_AGE_DAYS,
      minTransactions: config.VERIFY_MIN_TRANSACTIONS,
      activityWindowDays: config.VERIFY_ACTIVITY_WINDOW_DAYS,
      ownerStableDays: config.VERIFY_OWNER_STABLE_DAYS,
      minScore: config.VERIFY_MIN_SCORE,
    },
    anomaly: {
      detectAt: config.ANOMALY_DETECT_AT,
      frequencyFlagRatio: config.ANOMALY_FREQUENCY_FLAG_RATIO,
      valueFlagRatio: config.ANOMALY_VALUE_FLAG_RATIO,
      failureFlagRate: config.ANOMALY_FAILURE_FLAG_RATE,
    },
  };
}

/** The ERC-8004 settings in the shape the core services take. */
export function erc8004Options(config: Config) {
  return {
    identityRegistry: config.ERC8004_IDENTITY_REGISTRY,
    reputationRegistry: config.ERC8004_REPUTATION_REGISTRY,
    startBlock: BigInt(config.ERC8004_START_BLOCK),
    confirmations: BigInt(config.ERC8004_CONFIRMATIONS),
    blockRange: BigInt(config.ERC8004_BLOCK_RANGE),
    intervalMs: config.ERC8004_INTERVAL_MS,
    signerKey: config.ERC8004_SIGNER_KEY as `0x${string}` | undefined,
    feedbackBaseUrl: config.ERC8004_FEEDBACK_BASE_URL?.replace(/\/+$/, ''),
    feedbackFetch: config.ERC8004_FEEDBACK_FETCH,
  };
}

/** Whether webhooks may target private, loopback and link-local addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS, resolved). */
export function allowPrivateTargets(config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_TARGETS' | 'NODE_ENV'>): boolean {
  return (config.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? (config.NODE_ENV === 'production' ? 'off' : 'on')) === 'on';
}

/** The events' and webhooks' settings in the shape the core services take. */
export function eventsOptions(config: Config) {
  return {
    enabled: config.EVENTS,
    budgetThresholds: config.EVENTS_BUDGET_THRESHOLDS,
    retentionDays: config.EVENTS_RETENTION_DAYS,
    webhooks: {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      allowPrivateTargets: allowPrivateTargets(config),
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
      perOrganization: config.WEBHOOKS_PER_ORGANIZATION,
    },
  };
}

/** Which recorded transactions the score model counts (SCORE_TRANSACTIONS, defaulting on the chain). */
export function scoreTransactions(config: Pick<Config, 'SCORE_TRANSACTIONS' | 'CHAIN_RPC_URL'>): 'verified' | 'all' {
  return config.SCORE_TRANSACTIONS ?? (config.CHAIN_RPC_URL ? 'verified' : 'all');
}

/** The database settings in the shape `createDatabase` takes. */
export function databaseOptions(config: Config, applicationName: string) {
  return {
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolMax: config.DB_POOL_MAX,
    connectionTimeoutMs: config.DB_CONNECTION_TIMEOUT_MS,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    queryTimeoutMs: config.DB_QUERY_TIMEOUT_MS,
    preparedStatements: config.DB_PREPARED_STATEMENTS,
    applicationName,
  };
}

export { disablePretenuring } from './pretenuring.ts';
