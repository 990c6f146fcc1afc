import { createScratchDatabase, dropDatabase, dropPrefix, redisVersion, testPrefix } from '@vouch/testkit';
import pg from 'pg';
import { onCleanup } from './cleanup.ts';
import { envVar } from './env.ts';

/** Where the harness finds PostgreSQL (an admin database) and Redis; override with these variables. */
export const ADMIN_DATABASE_URL = envVar('BENCH_DATABASE_URL') ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = envVar('BENCH_REDIS_URL') ?? 'redis://127.0.0.1:6379';

/** A missing prerequisite (PostgreSQL or Redis unreachable): reported as its message alone. */
export class SetupError extends Error {}

export function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/** Server settings that shape the figures (commit latency, memory, connection headroom). */
const SETTINGS = [
  'max_connections',
  'shared_buffers',
  'fsync',
  'synchronous_commit',
  'wal_sync_method',
  'commit_delay',
];

/** Fails with a clear message unless PostgreSQL answers; returns `SELECT version()` and a few settings. */
export async function checkPostgres(): Promise<{ version: string; settings: Record<string, string> }> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string }>('SELECT version()');
    const settings = await client.query<{ name: string; setting: string; unit: string | null }>(
      'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
      [SETTINGS],
    );
    return {
      version: rows[0]?.version ?? 'unknown',
      settings: Object.fromEntries(settings.rows.map((r) => [r.name, r.unit ? `${r.setting} × ${r.unit}` : r.setting])),
    };
  } catch (error) {
    throw new SetupError(
      `PostgreSQL is unreachable at ${redact(ADMIN_DATABASE_URL)} (${(error as Error).message}). ` +
        'Start it, or point BENCH_DATABASE_URL at a server where this user may CREATE DATABASE.',
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/** Fails with a clear message unless Redis answers; returns its redis_version. */
export async function checkRedis(): Promise<string> {
  try {
    return await redisVersion(REDIS_URL, 3000);
  } catch (error) {
    throw new SetupError(
      `Redis is unreachable at ${redact(REDIS_URL)} (${(error as Error).message}). Start it, or set BENCH_REDIS_URL.`,
    );
  }
}

/** A fresh, empty database for this run, dropped at cleanup. */
export async function createBenchDatabase(): Promise<{ name: string; url: string }> {
  const database = await createScratchDatabase('vouch_bench_', { adminUrl: ADMIN_DATABASE_URL });
  onCleanup(`drop database ${database.name}`, () => dropDatabase(database.name, ADMIN_DATABASE_URL));
  return database;
}

/** A BullMQ/rate-limit key prefix of this run; every key under it is deleted at cleanup. */
export function benchPrefix(): string {
  const prefix = testPrefix('bench');
  onCleanup(`delete Redis keys ${prefix}:*`, () => dropPrefix(prefix, REDIS_URL));
  return prefix;
}
