import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import type { DB } from './schema.ts';

export type DatabaseDriver = 'postgres' | 'pglite';

export interface DatabaseOptions {
  /** A postgres:// URL; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl?: string | undefined;
  /** Directory for PGlite's files; `memory://` keeps everything in memory. */
  dataDir?: string | undefined;
  poolMax?: number;
  /** How long a request may wait for a pooled connection before failing (→ 503). */
  connectionTimeoutMs?: number;
  statementTimeoutMs?: number;
  applicationName?: string;
  onPoolError?: (error: Error) => void;
}

export interface Database {
  db: Kysely<DB>;
  driver: DatabaseDriver;
  /** Present for the postgres driver: pool statistics for metrics. */
  pool?: pg.Pool;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createDatabase(options: DatabaseOptions): Database {
  if (options.databaseUrl) return createPostgres(options.databaseUrl, options);
  return createPglite(options.dataDir ?? './.data');
}

function createPostgres(connectionString: string, options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 1000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 15_000,
    application_name: options.applicationName ?? 'vouch',
  });
  // An idle client losing its server must not crash the process; the pool drops it.
  pool.on('error', (error) => options.onPoolError?.(error));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    driver: 'postgres',
    pool,
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

function createPglite(dataDir: string): Database {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  const client = new PGlite(dataDir);
  const db = new Kysely<DB>({ dialect: new PGliteDialect(client) });
  return {
    db,
    driver: 'pglite',
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}
