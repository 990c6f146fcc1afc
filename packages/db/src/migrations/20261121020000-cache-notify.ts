import { type Kysely, sql } from 'kysely';

/**
 * Every change of an agent or a budget announces itself on channel `vouch_cache`
 * (payload `<table>:<address>`), at commit. API processes keep read caches of both and
 * drop an entry when its notification arrives, whichever process made the change.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION vouch_notify_cache() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':' || (to_jsonb(NEW) ->> TG_ARGV[0]));
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER agents_notify_cache AFTER INSERT OR UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION vouch_notify_cache('address')`.execute(db);
  await sql`CREATE TRIGGER budgets_notify_cache AFTER INSERT OR UPDATE ON budgets
    FOR EACH ROW EXECUTE FUNCTION vouch_notify_cache('agent')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS budgets_notify_cache ON budgets`.execute(db);
  await sql`DROP TRIGGER IF EXISTS agents_notify_cache ON agents`.execute(db);
  await sql`DROP FUNCTION IF EXISTS vouch_notify_cache()`.execute(db);
}
