import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, migrateToLatest } from '@vouch/db';
import pg from 'pg';
import { freePort } from './process.ts';

const run = promisify(execFile);

/** Where initdb, pg_ctl and postgres live: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string | null {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Postgres refuses to run as root: as root, its tools run as the `postgres` user. */
async function asPostgres(bin: string, args: string[]): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const { stdout, stderr } = await run(file, argv, { timeout: 60_000 });
  return `${stdout}${stderr}`;
}

async function idOf(user: string): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export interface DisposableCluster {
  port: number;
  /** A URL to database `name` (default: the migrated `vouch` database). */
  url(name?: string): string;
  /** `pg_ctl stop -m <mode>`: `fast` disconnects clients cleanly, `immediate` is a crash. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** `pg_ctl restart -m <mode>`. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  /** Runs SQL as the superuser on the `vouch` database. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** Stops the server and deletes its files. */
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL cluster of the test's own: `initdb` into a temporary directory, started
 * on a free loopback port, with a migrated `vouch` database. Tests stop, crash and
 * restart it without touching the machine's shared server.
 */
export async function startPostgresCluster(): Promise<DisposableCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found (set PG_BIN to the directory of initdb and pg_ctl)');
  const dir = mkdtempSync(join(tmpdir(), 'vouch-pg-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await idOf('postgres');
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const port = await freePort();
  await asPostgres(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const pgCtl = (...args: string[]) => asPostgres(join(bin, 'pg_ctl'), ['-D', data, ...args]);
  const start = async () => {
    await pgCtl('-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start');
  };
  await start();

  const url = (name = 'vouch') => `postgres://postgres@127.0.0.1:${port}/${name}`;
  const admin = new pg.Client({ connectionString: url('postgres') });
  await admin.connect();
  await admin.query('CREATE DATABASE vouch');
  await admin.end();
  const database = createDatabase({ databaseUrl: url() });
  await migrateToLatest(database.db);
  await database.close();

  let destroyed = false;
  return {
    port,
    url,
    stop: async (mode) => {
      await pgCtl('-m', mode, '-w', '-t', '60', 'stop');
    },
    start,
    restart: async (mode) => {
      await pgCtl('-o', options, '-l', join(dir, 'log'), '-m', mode, '-w', '-t', '60', 'restart');
    },
    query: async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
      const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5000 });
      client.on('error', () => {}); // a connection the test itself ends
      await client.connect();
      try {
        return (await client.query<R>(text, values)).rows;
      } finally {
        await client.end().catch(() => {});
      }
    },
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await pgCtl('-m', 'immediate', '-w', 'stop').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
