import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, migrateToLatest } from '@vouch/db';
import { ADMIN_DATABASE_URL, databaseUrlFor } from '@vouch/testkit';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

async function postgresReachable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Picks the database the API tests run on and migrates one template that every test file
 * starts from: on Postgres a template database each file clones, on PGlite a copy of a
 * migrated data directory each file's embedded database loads. Under CI=true an unreachable Postgres fails
 * the run; on a developer machine without Postgres the tests run on PGlite instead.
 */
export default async function setup(project: TestProject) {
  const requested =
    project.name === 'pglite' ? 'pglite' : (process.env.VOUCH_TEST_DB as 'postgres' | 'pglite' | undefined);
  let mode: 'postgres' | 'pglite' = requested ?? 'postgres';
  if (mode === 'postgres') {
    const problem = await postgresReachable();
    if (problem) {
      if (process.env.CI === 'true' || requested === 'postgres') {
        throw new Error(`PostgreSQL at ${ADMIN_DATABASE_URL} is unreachable (${problem}); tests need it under CI=true`);
      }
      console.warn(`\n[vouch] PostgreSQL unreachable (${problem}); running the database tests on embedded PGlite.\n`);
      mode = 'pglite';
    }
  }
  const template = `vouch_test_tpl_${randomBytes(4).toString('hex')}`;
  project.provide('testDbMode', mode);
  project.provide('templateDatabase', template);
  if (mode === 'pglite') {
    // A new embedded database takes PGlite's initdb about 4 s; one started from a migrated copy of
    // a data directory about 1 s. Each test file starts from this one (docs/testing.md).
    const embedded = createDatabase({ dataDir: 'memory://' });
    await migrateToLatest(embedded.db);
    const dump = await embedded.dumpDataDir?.();
    await embedded.close();
    if (!dump) throw new Error('the embedded database gave no copy of its data directory');
    const file = join(tmpdir(), `${template}.pglite.tar`);
    writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
    project.provide('templateDataDir', file);
    return () => rmSync(file, { force: true });
  }
  project.provide('templateDataDir', '');

  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  const database = createDatabase({ databaseUrl: databaseUrlFor(template) });
  await migrateToLatest(database.db);
  await database.close();

  return async () => {
    // Drop the template and every per-file clone of it.
    const clones = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2`,
      [`${template}_f%`, template],
    );
    for (const { datname } of clones.rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    }
    await admin.end();
  };
}
