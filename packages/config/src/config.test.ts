import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allowPrivateTargets,
  authMode,
  ConfigError,
  checkApiConfig,
  environment,
  loadConfig,
  queueConcurrency,
  queueNames,
  SHUTDOWN_GRACE_MS,
  scoreTransactions,
  secretBits,
  workerQueues,
} from './index.ts';

const ADMIN = 'a-secret-of-sufficient-length';

function problem(env: Record<string, string>): string {
  try {
    checkApiConfig(loadConfig(env));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('loadConfig', () => {
  it('gives every setting its one default', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      HOST: '127.0.0.1',
      SHUTDOWN_TIMEOUT_MS: 10_000,
      RECOMPUTE_CHUNK_SIZE: 250,
      JOB_WAIT_TIMEOUT_MS: 10_000,
      WORKER_CONCURRENCY: 4,
      CACHE_READS: true,
      COALESCE_WRITES: true,
      DB_PREPARED_STATEMENTS: true,
      MIGRATE_ON_START: true,
      RATE_LIMIT: true,
      VERIFY_MIN_SCORE: 100,
      // A killed worker's job is taken again within lock + stall interval: 5 s.
      WORKER_LOCK_DURATION_MS: 4000,
      WORKER_STALLED_INTERVAL_MS: 1000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses a bad value in one line naming the variable and the value', () => {
    const message = problem({ TRUST_PROXY: 'true' });
    expect(message).toMatch(/^invalid configuration: TRUST_PROXY: "true" is not an IP address/);
    expect(message).not.toContain('\n');
    expect(problem({ PORT: 'abc' })).toMatch(/^invalid configuration: PORT: .*\(got "abc"\)$/);
    expect(problem({ JOB_WAIT_TIMEOUT_MS: '1.5' })).toMatch(/JOB_WAIT_TIMEOUT_MS/);
    expect(problem({ CACHE_READS: 'yes' })).toMatch(/CACHE_READS/);
  });

  it('refuses a recomputation chunk larger than a chunk job carries', () => {
    expect(loadConfig({ RECOMPUTE_CHUNK_SIZE: '1000' }).RECOMPUTE_CHUNK_SIZE).toBe(1000);
    // A chunk of 1,001 agents failed its job's payload check when queued: every recomputation of
    // more agents answered 500, after its audit entry said it was queued.
    expect(problem({ RECOMPUTE_CHUNK_SIZE: '1001' })).toMatch(/RECOMPUTE_CHUNK_SIZE/);
  });

  it('names every bad variable at once', () => {
    const message = problem({ PORT: '-1', WORKER_CONCURRENCY_CHECKS: 'many' });
    expect(message).toMatch(/PORT: /);
    expect(message).toMatch(/WORKER_CONCURRENCY_CHECKS: /);
    expect(message).not.toContain('\n');
  });

  it('accepts trusted proxies as addresses, CIDRs and named ranges', () => {
    expect(loadConfig({ TRUST_PROXY: '10.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback' }).TRUST_PROXY).toBe(
      '10.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback',
    );
    expect(problem({ TRUST_PROXY: '10.0.0.0/33' })).toMatch(/invalid prefix length/);
    expect(problem({ TRUST_PROXY: 'proxy.internal' })).toMatch(/TRUST_PROXY/);
  });

  it('defaults AUTH to on in production and off elsewhere; an explicit AUTH wins', () => {
    expect(authMode(loadConfig({ NODE_ENV: 'production', ADMIN_API_KEY: ADMIN }))).toBe('on');
    for (const NODE_ENV of ['development', 'test'] as const) expect(authMode(loadConfig({ NODE_ENV }))).toBe('off');
    expect(authMode(loadConfig({}))).toBe('off');
    expect(authMode(loadConfig({ NODE_ENV: 'production', AUTH: 'off' }))).toBe('off');
    expect(authMode(loadConfig({ AUTH: 'on', ADMIN_API_KEY: ADMIN }))).toBe('on');
    expect(problem({ AUTH: 'maybe' })).toMatch(/AUTH: /);
  });

  it('needs an admin key whenever auth is on in a process that serves the API, and never prints it', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).NODE_ENV).toBe('production'); // a worker needs none
    expect(problem({ NODE_ENV: 'production' })).toMatch(/ADMIN_API_KEY: required when AUTH is on/);
    expect(problem({ AUTH: 'on' })).toMatch(/ADMIN_API_KEY: required/);
    expect(problem({ AUTH: '', NODE_ENV: 'production', ADMIN_API_KEY: '' })).toMatch(/ADMIN_API_KEY: required/);
    expect(problem({ AUTH: 'on', ADMIN_API_KEY: 'short-secret' })).toMatch(/at least 16 characters/);
    expect(problem({ AUTH: 'on', ADMIN_API_KEY: 'short-secret' })).not.toContain('short-secret');
    expect(loadConfig({ NODE_ENV: 'production', ADMIN_API_KEY: ADMIN }).ADMIN_API_KEY).toBe(ADMIN);
    expect(loadConfig({ NODE_ENV: 'production', AUTH: 'off' }).AUTH).toBe('off');
  });

  it('counts empty values as unset', () => {
    const config = loadConfig({ AUTH: '', RATE_LIMIT: '', CORS_ORIGINS: '', WORKER_CONCURRENCY_SCORES: '' });
    expect(config.AUTH).toBeUndefined();
    expect(config.RATE_LIMIT).toBe(true);
    expect(config.CORS_ORIGINS).toBeUndefined();
    expect(queueConcurrency(config).scores).toBe(4);
    // Numbers too: empty is the default, not 0.
    const numbers = loadConfig({ VERIFY_MIN_SCORE: '', ERC8004_CONFIRMATIONS: ' ', PORT: '', JOB_WAIT_TIMEOUT_MS: '' });
    expect([
      numbers.VERIFY_MIN_SCORE,
      numbers.ERC8004_CONFIRMATIONS,
      numbers.PORT,
      numbers.JOB_WAIT_TIMEOUT_MS,
    ]).toEqual([100, 12, 3000, 10_000]);
  });

  it('counts empty text and choice settings as unset too', () => {
    // `HOST=` copied from .env.example listened on every interface (Node takes an empty host
    // for all of them), and `NODE_ENV=` or `LOG_LEVEL=` stopped the start.
    const config = loadConfig({
      HOST: '',
      DATA_DIR: ' ',
      BULLMQ_PREFIX: '',
      NODE_ENV: '',
      LOG_LEVEL: '',
      VOUCH_ROLE: '',
    });
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      DATA_DIR: './.data',
      BULLMQ_PREFIX: 'vouch',
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      VOUCH_ROLE: 'all',
    });
  });

  it('refuses a time a timer cannot hold, and a Redis URL that is not one, naming the variable', () => {
    expect(problem({ IDEMPOTENCY_PURGE_INTERVAL_MS: String(30 * 86_400_000) })).toMatch(
      /IDEMPOTENCY_PURGE_INTERVAL_MS: /,
    );
    expect(problem({ SHUTDOWN_TIMEOUT_MS: '1e12' })).toMatch(/SHUTDOWN_TIMEOUT_MS: /);
    // The signal handler's deadline is a second past it, and a timer past 2^31 − 1 ms fires at
    // once: SHUTDOWN_TIMEOUT_MS=2147483647 exited 1 on SIGTERM without draining anything.
    expect(problem({ SHUTDOWN_TIMEOUT_MS: '2147483647' })).toMatch(/^invalid configuration: SHUTDOWN_TIMEOUT_MS: /);
    const longest = loadConfig({ SHUTDOWN_TIMEOUT_MS: '2147482647' }).SHUTDOWN_TIMEOUT_MS;
    expect(longest + SHUTDOWN_GRACE_MS).toBeLessThanOrEqual(2_147_483_647);
    expect(loadConfig({ JOB_WAIT_TIMEOUT_MS: '2147483647' }).JOB_WAIT_TIMEOUT_MS).toBe(2_147_483_647);
    // A duration that is no timer's: up to its own bound (an approval waits up to 30 days, as a hold lasts).
    expect(loadConfig({ APPROVAL_TTL_MS: String(30 * 86_400_000) }).APPROVAL_TTL_MS).toBe(2_592_000_000);
    expect(problem({ APPROVAL_TTL_MS: String(31 * 86_400_000) })).toMatch(/APPROVAL_TTL_MS: /);
    expect(loadConfig({ WEBHOOK_DISABLE_AFTER_MS: String(30 * 86_400_000) }).WEBHOOK_DISABLE_AFTER_MS).toBe(
      2_592_000_000,
    );
    for (const REDIS_URL of ['redis.internal:6379', 'http://redis:6379', 'redis://', 'redis://h:6379/x'])
      expect(problem({ REDIS_URL }), REDIS_URL).toMatch(/^invalid configuration: REDIS_URL: must be a redis:\/\//);
    for (const REDIS_URL of ['redis://127.0.0.1:6379', 'rediss://user:pw@cache.example:6380/2', 'redis://h'])
      expect(loadConfig({ REDIS_URL }).REDIS_URL).toBe(REDIS_URL);
  });
});

describe('spans of days counted back from now', () => {
  it('are refused past what a timestamp holds, naming the variable', () => {
    // Taken up to 2,147,483,647: VERIFY_ACTIVITY_WINDOW_DAYS=3000000 answered every verification
    // 400 "a value in the request cannot be stored" (its window began in the year -6187), and
    // EVENTS_RETENTION_DAYS=3000000 failed the hourly purge of events.
    for (const key of ['VERIFY_ACTIVITY_WINDOW_DAYS', 'EVENTS_RETENTION_DAYS']) {
      expect(problem({ [key]: '3000000' }), key).toMatch(new RegExp(`^invalid configuration: ${key}: `));
      expect(problem({ [key]: '100001' }), key).toMatch(new RegExp(`^invalid configuration: ${key}: `));
      expect((loadConfig({ [key]: '100000' }) as Record<string, unknown>)[key]).toBe(100_000);
    }
  });
});

describe('a request waiting for its job', () => {
  it('gets its answer before its idle connection is closed', () => {
    // A connection without traffic for HTTP_CONNECTION_TIMEOUT_MS is closed, a request waiting
    // for its job included: with JOB_WAIT_TIMEOUT_MS 3 s and the connection's 1 s, a batch got
    // no answer at 1 s (the socket closed), neither its result nor the 202 with the job's id,
    // while the job went on. The wait and the second it may take to settle must fit in it.
    expect(problem({ JOB_WAIT_TIMEOUT_MS: '3000', HTTP_CONNECTION_TIMEOUT_MS: '1000' })).toMatch(
      /^invalid configuration: JOB_WAIT_TIMEOUT_MS: .*HTTP_CONNECTION_TIMEOUT_MS/,
    );
    expect(problem({ JOB_WAIT_TIMEOUT_MS: '119001' })).toMatch(/JOB_WAIT_TIMEOUT_MS: /);
    expect(() => checkApiConfig(loadConfig({ JOB_WAIT_TIMEOUT_MS: '119000' }))).not.toThrow();
    // A worker serves no HTTP: the API's connections are not its concern.
    expect(loadConfig({ JOB_WAIT_TIMEOUT_MS: '3000', HTTP_CONNECTION_TIMEOUT_MS: '1000' }).JOB_WAIT_TIMEOUT_MS).toBe(
      3000,
    );
  });
});

describe('which transactions the score counts', () => {
  it('defaults to verified ones when a chain is configured and to all without one; an explicit value wins', () => {
    expect(scoreTransactions(loadConfig({}))).toBe('all');
    expect(scoreTransactions(loadConfig({ CHAIN_RPC_URL: 'http://127.0.0.1:8545' }))).toBe('verified');
    expect(scoreTransactions(loadConfig({ CHAIN_RPC_URL: 'http://127.0.0.1:8545', SCORE_TRANSACTIONS: 'all' }))).toBe(
      'all',
    );
    expect(scoreTransactions(loadConfig({ SCORE_TRANSACTIONS: '' }))).toBe('all');
  });

  it('refuses verified without a chain, and any other value', () => {
    expect(problem({ SCORE_TRANSACTIONS: 'verified' })).toMatch(
      /^invalid configuration: SCORE_TRANSACTIONS: "verified" needs CHAIN_RPC_URL/,
    );
    expect(problem({ SCORE_TRANSACTIONS: 'some' })).toMatch(/SCORE_TRANSACTIONS: .*\(got "some"\)$/);
  });
});

describe('the admin key in production', () => {
  it('must be as strong as 128 random bits and use at least 10 different characters', () => {
    const production = (key: string) => problem({ NODE_ENV: 'production', ADMIN_API_KEY: key });
    for (const weak of [
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      'abababababababababababababababab',
      'password-password-1',
      '0123456789012345678901234567',
    ]) {
      expect(production(weak)).toMatch(/^invalid configuration: ADMIN_API_KEY: too guessable for production/);
      expect(production(weak)).not.toContain(weak);
    }
    // 32 hex digits (128 bits), 22 base64url characters (132 bits): accepted.
    for (const strong of ['9f86d081884c7d659a2feaa0c55ad015', 'Xq3_vT9kLm2PzR8wYb4NcA']) {
      expect(() => checkApiConfig(loadConfig({ NODE_ENV: 'production', ADMIN_API_KEY: strong }))).not.toThrow();
    }
    // Outside production a short test key is fine.
    expect(() => checkApiConfig(loadConfig({ AUTH: 'on', ADMIN_API_KEY: 'a-test-key-0123456' }))).not.toThrow();
    expect(secretBits('9f86d081884c7d659a2feaa0c55ad015')).toBe(32 * Math.log2(36));
  });
});

describe('queue settings', () => {
  it('gives recomputation chunks one at a time per process and the other queues WORKER_CONCURRENCY', () => {
    expect(queueConcurrency(loadConfig({ WORKER_CONCURRENCY: '6' }))).toEqual({
      scores: 6,
      checks: 6,
      recompute: 1,
      refresh: 6,
      maintenance: 1,
      webhooks: 16,
    });
  });

  it('lets WORKER_CONCURRENCY_<QUEUE> override any queue, its own default included', () => {
    const config = loadConfig({ WORKER_CONCURRENCY_RECOMPUTE: '3', WORKER_CONCURRENCY_CHECKS: '8' });
    expect(queueConcurrency(config)).toEqual({
      scores: 4,
      checks: 8,
      recompute: 3,
      refresh: 4,
      maintenance: 1,
      webhooks: 16,
    });
  });

  it('has a concurrency setting for every queue', () => {
    expect(Object.keys(queueConcurrency(loadConfig({}))).sort()).toEqual([...queueNames].sort());
    for (const queue of queueNames)
      expect(problem({ [`WORKER_CONCURRENCY_${queue.toUpperCase()}`]: '0' })).toBeTruthy();
  });

  it('takes the queues a worker serves from WORKER_QUEUES and refuses unknown ones', () => {
    expect(workerQueues(loadConfig({}))).toEqual([...queueNames]);
    expect(workerQueues(loadConfig({ WORKER_QUEUES: 'checks, scores' }))).toEqual(['checks', 'scores']);
    expect(problem({ WORKER_QUEUES: 'checks,emails' })).toMatch(/WORKER_QUEUES: unknown queues emails/);
  });

  it('runs one worker per queue named in WORKER_QUEUES, and refuses a list that names none', () => {
    // `checks,checks` started two workers on checks, each at WORKER_CONCURRENCY_CHECKS: twice the
    // jobs at once the setting allows. `,` started a worker process that takes no job.
    expect(workerQueues(loadConfig({ WORKER_QUEUES: 'checks, scores,checks' }))).toEqual(['checks', 'scores']);
    expect(problem({ WORKER_QUEUES: ',' })).toMatch(/^invalid configuration: WORKER_QUEUES: /);
  });
});

describe('events and webhooks', () => {
  it('are on, announce 80 and 100 % of a limit, and keep events 30 days by default', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      EVENTS: true,
      EVENTS_BUDGET_THRESHOLDS: [80, 100],
      EVENTS_RETENTION_DAYS: 30,
      WEBHOOK_TIMEOUT_MS: 10_000,
      WEBHOOK_DISABLE_AFTER_MS: 5 * 86_400_000,
    });
    expect(loadConfig({ EVENTS: 'off' }).EVENTS).toBe(false);
  });

  it('take budget thresholds as distinct whole percentages, sorted', () => {
    expect(loadConfig({ EVENTS_BUDGET_THRESHOLDS: '100, 50,90' }).EVENTS_BUDGET_THRESHOLDS).toEqual([50, 90, 100]);
    for (const bad of ['0', '101', '80,80', '80.5', 'eighty', '80,,100', '-5']) {
      expect(problem({ EVENTS_BUDGET_THRESHOLDS: bad }), bad).toMatch(/EVENTS_BUDGET_THRESHOLDS: must be distinct/);
    }
  });

  it('refuse private webhook targets in production unless allowed, and allow them elsewhere', () => {
    expect(allowPrivateTargets(loadConfig({ NODE_ENV: 'production' }))).toBe(false);
    expect(allowPrivateTargets(loadConfig({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on' }))).toBe(true);
    expect(allowPrivateTargets(loadConfig({}))).toBe(true);
    expect(allowPrivateTargets(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'off' }))).toBe(false);
    expect(problem({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' })).toMatch(/WEBHOOK_ALLOW_PRIVATE_TARGETS/);
  });
});

describe('HOST', () => {
  it('refuses a value that is no address or host name to listen on, naming the variable', () => {
    // Each stopped the API with `could not start: getaddrinfo ENOTFOUND <value>`, naming no setting.
    for (const HOST of ['0.0.0.0:3000', 'http://127.0.0.1', '[::1]', 'api internal'])
      expect(problem({ HOST }), HOST).toMatch(/^invalid configuration: HOST: /);
  });

  it('accepts IPv4 and IPv6 addresses and host names', () => {
    for (const HOST of ['0.0.0.0', '127.0.0.1', '::', '::1', 'localhost', 'api.internal', 'vouch_api'])
      expect(loadConfig({ HOST }).HOST).toBe(HOST);
  });
});

describe('CORS_ORIGINS', () => {
  it('refuses an entry that is no origin a browser sends, naming the variable', () => {
    // Compared as text with the Origin header (scheme, host and a port only when not the
    // default): each of these allowed nothing, and a browser client was refused without a word.
    for (const CORS_ORIGINS of [
      'https://app.example.com/',
      'https://app.example.com:443',
      'https://App.example.com',
      'app.example.com',
      '*',
      'https://a.example, https://b.example/app',
    ])
      expect(problem({ CORS_ORIGINS }), CORS_ORIGINS).toMatch(/^invalid configuration: CORS_ORIGINS: /);
  });

  it('accepts origins, with a port', () => {
    const CORS_ORIGINS = 'https://app.example.com, http://localhost:5173,http://[::1]:8080';
    expect(loadConfig({ CORS_ORIGINS }).CORS_ORIGINS).toBe(CORS_ORIGINS);
  });
});

describe('DATABASE_URL', () => {
  it('refuses a value that is no PostgreSQL URL, naming the variable and not the value', () => {
    // Read by pg as a path under a made-up host: `localhost:5432/vouch` became the database
    // "432/vouch" of the default host, `notaurl` the host "base"; a worker started on either.
    for (const DATABASE_URL of [
      'localhost:5432/vouch',
      '127.0.0.1:5432/vouch',
      'notaurl',
      'postgres//user:secret@db/vouch',
      'http://db:5432/vouch',
    ]) {
      const message = problem({ DATABASE_URL });
      expect(message, DATABASE_URL).toMatch(/^invalid configuration: DATABASE_URL: must be a postgres:\/\//);
      expect(message).not.toContain(DATABASE_URL);
    }
  });

  it('ends a slow statement on the server before the client gives up on it', () => {
    // With statement_timeout 5 s and the client's 1 s, `SELECT pg_sleep(3)` failed in the client
    // at 1 s (a 503) and was still running on the server, holding whatever it had locked.
    const DATABASE_URL = 'postgres://vouch@db/vouch';
    expect(problem({ DATABASE_URL, DB_STATEMENT_TIMEOUT_MS: '30000' })).toMatch(
      /^invalid configuration: DB_STATEMENT_TIMEOUT_MS: .*DB_QUERY_TIMEOUT_MS/,
    );
    expect(problem({ DATABASE_URL, DB_STATEMENT_TIMEOUT_MS: '5000', DB_QUERY_TIMEOUT_MS: '5100' })).toMatch(
      /DB_STATEMENT_TIMEOUT_MS: /,
    );
    expect(loadConfig({ DATABASE_URL, DB_STATEMENT_TIMEOUT_MS: '19750' }).DB_STATEMENT_TIMEOUT_MS).toBe(19_750);
    // The embedded database has one connection and no server: its query timeout is the wait for it.
    expect(loadConfig({ DB_STATEMENT_TIMEOUT_MS: '30000' }).DB_STATEMENT_TIMEOUT_MS).toBe(30_000);
  });

  it('accepts postgres:// and postgresql:// URLs, a socket directory included', () => {
    for (const DATABASE_URL of [
      'postgres://vouch:vouch@postgres:5432/vouch',
      'postgresql://db.example/vouch?sslmode=require',
      'postgres:///vouch?host=/var/run/postgresql',
    ])
      expect(loadConfig({ DATABASE_URL }).DATABASE_URL).toBe(DATABASE_URL);
  });
});

describe('CHAIN_RPC_URL', () => {
  it('refuses a value viem cannot send a JSON-RPC request to, naming the variable', () => {
    // A host without its scheme, a WebSocket URL (read through viem's http transport), a typo:
    // each would start a service whose every chain read fails — and, with SCORE_TRANSACTIONS
    // defaulting to verified once CHAIN_RPC_URL is set, whose scores count no transaction.
    for (const CHAIN_RPC_URL of ['localhost:8545', '127.0.0.1:8545', 'ws://127.0.0.1:8545', 'htp://node:8545', 'node'])
      expect(problem({ CHAIN_RPC_URL }), CHAIN_RPC_URL).toMatch(/CHAIN_RPC_URL/);
  });

  it('accepts http(s) endpoints, with a path, a port or credentials', () => {
    for (const CHAIN_RPC_URL of [
      'http://127.0.0.1:8545',
      'https://mainnet.example/v3/key',
      'https://user:pw@rpc.example:8443/path',
    ])
      expect(loadConfig({ CHAIN_RPC_URL }).CHAIN_RPC_URL).toBe(CHAIN_RPC_URL);
  });
});

describe('environment', () => {
  it('reads a .env file in the directory under the process environment, which wins; none is no error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vouch-env-'));
    try {
      expect(environment(dir, { PORT: '4000' })).toEqual({ PORT: '4000' });
      writeFileSync(join(dir, '.env'), '# a comment\nPORT=3100\nHOST=0.0.0.0\nLOG_LEVEL="debug"\n');
      expect(environment(dir, { PORT: '4000' })).toEqual({ PORT: '4000', HOST: '0.0.0.0', LOG_LEVEL: 'debug' });
      const config = loadConfig(environment(dir, {}));
      expect([config.PORT, config.HOST, config.LOG_LEVEL]).toEqual([3100, '0.0.0.0', 'debug']);
      // A bad value in the file is refused as one in the environment is, naming the variable.
      writeFileSync(join(dir, '.env'), 'PORT=eighty\n');
      expect(() => loadConfig(environment(dir, {}))).toThrow(/PORT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
