import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createDatabase, type Database, type DB, type Kysely, sql } from '@vouch/db';
import pg from 'pg';
import { inject } from 'vitest';
import { latch, sleep } from './process.ts';

/** The server the database tests create their databases on. */
export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// What test/global-setup.ts provides to every test file.
declare module 'vitest' {
  export interface ProvidedContext {
    testDbMode: 'postgres' | 'pglite';
    templateDatabase: string;
    /** PGlite: the file holding a migrated data directory each test file's database starts from. */
    templateDataDir: string;
  }
}

export function databaseUrlFor(name: string, adminUrl = ADMIN_DATABASE_URL): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A new database `<prefix><random>` on the admin URL's server, empty or a copy of `template`;
 * the caller drops it with `dropDatabase`.
 */
export async function createScratchDatabase(
  prefix: string,
  options: { template?: string; adminUrl?: string } = {},
): Promise<{ name: string; url: string }> {
  const adminUrl = options.adminUrl ?? ADMIN_DATABASE_URL;
  const name = `${prefix}${randomBytes(4).toString('hex')}`;
  const statement = `CREATE DATABASE ${name}${options.template ? ` TEMPLATE ${options.template}` : ''}`;
  await withAdmin(adminUrl, async (admin) => {
    // Copying needs the template to be idle; concurrent copies can briefly collide.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(statement);
        return;
      } catch (error) {
        if (attempt >= 20) throw error;
        await sleep(100 + Math.random() * 200);
      }
    }
  });
  return { name, url: databaseUrlFor(name, adminUrl) };
}

/** Drops a database, disconnecting whoever is still on it. */
export async function dropDatabase(name: string, adminUrl = ADMIN_DATABASE_URL): Promise<void> {
  await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** The migrated data directory's copy, read once per worker (its files share one module graph). */
let templateCopy: { file: string; copy: Blob } | undefined;
function templateDataDir(file: string): Blob {
  if (templateCopy?.file !== file) templateCopy = { file, copy: new Blob([readFileSync(file)]) };
  return templateCopy.copy;
}

/**
 * A fresh, migrated database for one test file: a clone of the migrated template
 * on Postgres, or an in-memory PGlite when the run uses the embedded driver.
 */
export async function createTestDatabase(
  options: { poolMax?: number; connectionTimeoutMs?: number; statementTimeoutMs?: number } = {},
): Promise<Database & { url?: string }> {
  if (inject('testDbMode') === 'pglite') {
    // A copy of the data directory test/global-setup.ts migrated: as a clone of the template on PostgreSQL.
    return createDatabase({ dataDir: 'memory://', loadDataDir: templateDataDir(inject('templateDataDir')) });
  }
  const template = inject('templateDatabase');
  const { name, url } = await createScratchDatabase(`${template}_f`, { template });
  const database = createDatabase({
    databaseUrl: url,
    poolMax: options.poolMax ?? 20,
    connectionTimeoutMs: options.connectionTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  return {
    ...database,
    url,
    close: async () => {
      await database.close();
      await dropDatabase(name).catch(() => {});
    },
  };
}

/**
 * Runs `work` in a transaction and leaves the transaction open, holding every lock `work` took,
 * until `release()` (which commits it and resolves once it has). Resolves once `work` has run; a
 * failing `work` rejects. For tests of what waits behind a lock, on PostgreSQL: the embedded
 * database's one connection would wait behind it too.
 */
export async function holdTransaction(
  db: Kysely<DB>,
  work: (trx: Kysely<DB>) => Promise<unknown>,
): Promise<{ release(): Promise<void> }> {
  const release = latch();
  const entered = latch();
  const done = db.transaction().execute(async (trx) => {
    await work(trx);
    entered.open();
    await release.opened;
  });
  await Promise.race([entered.opened, done]);
  return {
    release: async () => {
      release.open();
      await done;
    },
  };
}

/**
 * How many statements of this database wait for a lock, of those whose text is LIKE `query` (any
 * when omitted): what a test of one statement waiting behind another polls for before it lets
 * the first go. PostgreSQL only.
 */
export async function lockWaiters(db: Kysely<DB>, query = '%'): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${query}`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The tables whose names are LIKE `pattern`, sorted: what a migration test checks it created or dropped. */
export async function tablesLike(db: Kysely<DB>, pattern: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_name LIKE ${pattern}
    ORDER BY 1`.execute(db);
  return rows.map((r) => r.name);
}

/** The columns of `table` whose names are LIKE `pattern`, sorted: what a migration test checks it added or removed. */
export async function columnsLike(db: Kysely<DB>, table: string, pattern: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT column_name AS name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} AND column_name LIKE ${pattern}
    ORDER BY 1`.execute(db);
  return rows.map((r) => r.name);
}
