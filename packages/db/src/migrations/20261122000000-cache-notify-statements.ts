import { type Kysely, sql } from 'kysely';
import * as rowTriggers from './20261121020000-cache-notify.ts';

/** A statement that changes more rows than this announces its whole table instead of each row. */
export const CACHE_NOTIFY_ROW_LIMIT = 100;

/**
 * The cache notifications of 20261121020000 per statement instead of per row: one trigger
 * call per statement reads the changed keys from its transition table and sends
 * `<table>:<key>` for each, or `<table>:*` (drop every entry of that table) when more than
 * CACHE_NOTIFY_ROW_LIMIT rows changed. A score recomputation changes 250 agents per
 * statement: a row trigger ran 250 times (2.8–3.7 ms of a 21–31 ms statement) and sent 250
 * notifications to every listener; this runs once and sends one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await rowTriggers.down(db);
  await sql`
    CREATE FUNCTION vouch_notify_cache_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      changed_count integer;
      changed_key text;
    BEGIN
      SELECT count(*) INTO changed_count FROM changed;
      IF changed_count > ${sql.raw(String(CACHE_NOTIFY_ROW_LIMIT))} THEN
        PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':*');
      ELSE
        FOR changed_key IN EXECUTE format('SELECT DISTINCT %I FROM changed', TG_ARGV[0]) LOOP
          PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':' || changed_key);
        END LOOP;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  // A trigger with a transition table serves one event, hence one per event.
  for (const [table, key] of [
    ['agents', 'address'],
    ['budgets', 'agent'],
  ] as const) {
    for (const event of ['insert', 'update'] as const) {
      await sql`CREATE TRIGGER ${sql.raw(`${table}_notify_cache_${event}`)}
        AFTER ${sql.raw(event.toUpperCase())} ON ${sql.table(table)} REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION vouch_notify_cache_rows(${sql.lit(key)})`.execute(db);
    }
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['agents', 'budgets']) {
    for (const event of ['insert', 'update']) {
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_notify_cache_${event}`)} ON ${sql.table(table)}`.execute(db);
    }
  }
  await sql`DROP FUNCTION IF EXISTS vouch_notify_cache_rows()`.execute(db);
  // Back to the row triggers, as their migration makes them.
  await rowTriggers.up(db);
}
