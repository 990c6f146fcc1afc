import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { LazyPgliteDialect } from './pglite.ts';
import { GuardedClient, PreparingClient } from './prepared.ts';
import type { DB } from './schema.ts';

export type DatabaseDriver = 'postgres' | 'pglite';

export interface DatabaseOptions {
  /** A postgres:// URL; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl?: string | undefined;
  /** Directory for PGlite's files; `memory://` keeps everything in memory. */
  dataDir?: string | undefined;
  /**
   * PGlite only: start from this copy of a data directory (`Database.dumpDataDir`) instead of
   * making a new one, which takes PGlite's `initdb` several seconds.
   */
  loadDataDir?: Blob | undefined;
  poolMax?: number;
  /** How long a request may wait for a pooled connection before failing (→ 503). */
  connectionTimeoutMs?: number;
  statementTimeoutMs?: number;
  /**
   * A query not answered within this long fails (503) and its connection is replaced. On PGlite:
   * how long a query waits for the one connection.
   */
  queryTimeoutMs?: number;
  applicationName?: string;
  /**
   * Statements marked with `runPrepared` become named prepared statements (default true).
   * Off for poolers that cannot carry them (PgBouncer in transaction mode before 1.21).
   */
  preparedStatements?: boolean;
  onPoolError?: (error: Error) => void;
  /**
   * A listening connection proves itself this often: a notification it sends to itself on a
   * channel of its own must come back within `timeoutMs`, or it counts as lost (default every
   * 5 s, within 3 s). See `listenPostgres`.
   */
  listenHeartbeat?: { everyMs: number; timeoutMs: number };
}

export interface Database {
  db: Kysely<DB>;
  driver: DatabaseDriver;
  /** Present for the postgres driver: pool statistics for metrics. */
  pool?: pg.Pool;
  ping(): Promise<void>;
  /**
   * Listens on a notification channel. `onReady` fires each time listening (re)starts and is
   * proven to deliver; `onLost` when notifications may have been missed (the connection dropped,
   * or stopped delivering).
   */
  listen(channel: string, handlers: ListenHandlers): Promise<Listening>;
  /** PGlite only: a copy of its data directory (a tarball), to start another from (`loadDataDir`). */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

export interface Listening {
  /**
   * Whether delivery is proven now: a heartbeat came back within the last `everyMs + timeoutMs`
   * (PostgreSQL; always true on PGlite). False once the path to the server has gone quiet, before
   * the connection counts as lost: what is known of the notifications is then out of date.
   */
  proven(): boolean;
  close(): Promise<void>;
}

export interface ListenHandlers {
  onNotify(payload: string): void;
  onReady?(): void;
  onLost?(error: unknown): void;
}

/** How long a query may go unanswered (PostgreSQL) or wait for the one connection (PGlite) unless told. */
const QUERY_TIMEOUT_MS = 20_000;

const LISTEN_HEARTBEAT = { everyMs: 5_000, timeoutMs: 3_000 };

/** How long the readiness connection may take to connect, or to answer its `SELECT 1`, before it is replaced. */
const PING_TIMEOUT_MS = 5_000;

export function createDatabase(options: DatabaseOptions): Database {
  if (options.databaseUrl) return createPostgres(options.databaseUrl, options);
  return createPglite(options.dataDir ?? './.data', options.queryTimeoutMs ?? QUERY_TIMEOUT_MS, options.loadDataDir);
}

function createPostgres(connectionString: string, options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 1000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 15_000,
    // Client side: a server or network that stops answering must not hold a request (or the
    // connection) forever. Longer than statement_timeout, so a slow statement is the server's to end.
    query_timeout: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    // Dead peers are noticed by TCP even on idle connections.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: options.applicationName ?? 'vouch',
    Client: options.preparedStatements !== false ? PreparingClient : GuardedClient,
  });
  // An idle client losing its server must not crash the process; the pool drops it.
  pool.on('error', (error) => options.onPoolError?.(error));
  // Neither may a checked-out one. pg-pool listens for errors only on idle clients, so a
  // connection that dies while a request holds it (between two statements of a transaction
  // when the server shuts down or its backend is terminated) emitted an 'error' nobody
  // handled, and Node ended the process. The error also fails the client's next query
  // (→ 503) and the pool discards the client when it is released; idle clients' errors are
  // reported through the pool's 'error' above, so nothing is logged here.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  const ping = pinger(connectionString, options.applicationName ?? 'vouch');
  return {
    db,
    driver: 'postgres',
    pool,
    ping,
    listen: (channel, handlers) =>
      listenPostgres(connectionString, channel, handlers, options.listenHeartbeat ?? LISTEN_HEARTBEAT, (to, payload) =>
        pool.query('SELECT pg_notify($1, $2)', [to, payload]),
      ),
    close: () => {
      ping.close();
      return db.destroy();
    },
  };
}

/**
 * What `ping` (readiness) asks of PostgreSQL, on a connection of its own: through the pool, a
 * pool busy with requests for longer than a probe waits read as a database that is down, and
 * every instance of a loaded fleet would leave its load balancer at once. Pool usage is
 * reported by /metrics. Probes at the same moment share one `SELECT 1`; a connection that fails
 * or does not answer is dropped and the next probe opens another.
 */
function pinger(connectionString: string, applicationName: string) {
  let client: pg.Client | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  const drop = (c: pg.Client) => {
    if (client === c) client = undefined;
    // A silent peer would keep a polite end waiting for TCP to give up: the socket goes now.
    (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    c.end().catch(() => {});
  };
  const once = async () => {
    if (closed) throw new Error('the database is closed');
    let c = client;
    if (!c) {
      const next = new pg.Client({
        connectionString,
        application_name: `${applicationName}-ready`,
        connectionTimeoutMillis: PING_TIMEOUT_MS,
        query_timeout: PING_TIMEOUT_MS,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      });
      next.on('error', () => drop(next));
      try {
        await next.connect();
      } catch (error) {
        drop(next);
        throw error;
      }
      client = next;
      c = next;
    }
    try {
      await c.query('SELECT 1');
    } catch (error) {
      drop(c);
      throw error;
    }
  };
  const ping = (): Promise<void> => {
    running ??= once().finally(() => {
      running = undefined;
    });
    return running;
  };
  ping.close = () => {
    closed = true;
    if (client) drop(client);
  };
  return ping;
}

/**
 * A dedicated connection that LISTENs, reconnecting (with a short backoff) when it drops.
 *
 * A connection can stop delivering without an error: a peer or a middlebox gone silently (TCP
 * keepalive notices that only after minutes), or a pooler that does not pass notifications on
 * (PgBouncer in transaction mode accepts LISTEN and delivers nothing). So the connection also
 * listens on a channel of its own and, every `heartbeat.everyMs`, notifies it from another
 * session (`notify`, through the pool), as every real notification comes: a heartbeat sent and
 * not back within `heartbeat.timeoutMs` counts as a lost connection. One that could not be sent
 * (the pool busy or away) proves nothing either way and is skipped, but then no heartbeat comes
 * back either: `proven()` is true only within `everyMs + timeoutMs` of the last one that did, so
 * a process whose whole path to the server has gone quiet stops trusting what it was told long
 * before TCP keepalive ends the connection. `onReady` waits for the first heartbeat, so a
 * connection that never delivers is never reported ready.
 */
async function listenPostgres(
  connectionString: string,
  channel: string,
  handlers: ListenHandlers,
  heartbeat: { everyMs: number; timeoutMs: number },
  notify: (channel: string, payload: string) => Promise<unknown>,
) {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  // When the last heartbeat came back (performance.now()), on the current connection.
  let provenAt = Number.NEGATIVE_INFINITY;
  const lease = heartbeat.everyMs + heartbeat.timeoutMs;
  const own = `${channel}_heartbeat_${randomBytes(6).toString('hex')}`;
  const connect = async (): Promise<void> => {
    if (closed) return;
    const next = new pg.Client({
      connectionString,
      application_name: 'vouch-listen',
      connectionTimeoutMillis: 2000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    let beat: NodeJS.Timeout | undefined;
    let waiting: { payload: string; done(): void } | undefined;
    const lost = (error: unknown) => {
      if (client !== next) return;
      client = undefined;
      provenAt = Number.NEGATIVE_INFINITY;
      clearTimeout(beat);
      next.removeAllListeners('notification');
      // A silent peer would keep a polite end waiting for TCP to give up: the socket goes now.
      (next as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      next.end().catch(() => {});
      handlers.onLost?.(error);
      if (!closed) retry = setTimeout(() => void connect(), 500);
    };
    /**
     * One heartbeat: `true` when it came back, `false` when it could not be sent; rejects when it
     * was sent and did not come back in time (counted from when it was sent, not from when the
     * pool was asked for a connection).
     */
    let sent = 0;
    const prove = async (): Promise<boolean> => {
      const payload = String(++sent);
      // Listened for before it is sent: it may arrive before the sender hears its answer.
      const back = new Promise<true>((resolve) => {
        waiting = {
          payload,
          done: () => {
            provenAt = performance.now();
            resolve(true);
          },
        };
      });
      let timer: NodeJS.Timeout | undefined;
      try {
        if (
          !(await notify(own, payload).then(
            () => true,
            () => false,
          ))
        )
          return false;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`listen connection did not deliver its heartbeat within ${heartbeat.timeoutMs} ms`)),
            heartbeat.timeoutMs,
          );
          timer.unref();
        });
        return await Promise.race([back, late]);
      } finally {
        clearTimeout(timer);
        waiting = undefined;
      }
    };
    const keepProving = () => {
      beat = setTimeout(() => {
        prove().then(keepProving, lost);
      }, heartbeat.everyMs).unref();
    };
    next.on('error', lost);
    next.on('end', () => lost(new Error('listen connection ended')));
    next.on('notification', (message) => {
      if (message.channel === own) {
        if (waiting && message.payload === waiting.payload) waiting.done();
        return;
      }
      if (message.payload !== undefined) handlers.onNotify(message.payload);
    });
    client = next;
    try {
      await next.connect();
      await next.query(`LISTEN ${pg.escapeIdentifier(channel)}; LISTEN ${pg.escapeIdentifier(own)}`);
      if (!(await prove())) throw new Error('could not send the listen connection its first heartbeat');
      if (client === next && !closed) {
        handlers.onReady?.();
        keepProving();
      }
    } catch (error) {
      lost(error);
    }
  };
  await connect();
  return {
    proven: () => client !== undefined && performance.now() - provenAt <= lease,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}

function createPglite(dataDir: string, waitMs: number, loadDataDir?: Blob): Database {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  const dialect = new LazyPgliteDialect(dataDir, waitMs, loadDataDir);
  const db = new Kysely<DB>({ dialect });
  return {
    db,
    driver: 'pglite',
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    // One process owns the embedded database, so its notifications are never missed.
    listen: async (channel, handlers) => {
      const client = await dialect.client();
      const unsubscribe = await client.listen(channel, (payload) => handlers.onNotify(payload));
      handlers.onReady?.();
      return { proven: () => true, close: () => unsubscribe() };
    },
    dumpDataDir: async () => (await dialect.client()).dumpDataDir('none'),
    close: () => db.destroy(),
  };
}
