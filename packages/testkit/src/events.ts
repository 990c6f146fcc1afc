import type { App } from '@vouch/api';
import { type Database, sql } from '@vouch/db';
import { type Event, eventList, successEnvelope } from '@vouch/schemas';

/**
 * Waits until no other connection of the test's database is in a writing transaction. Events
 * are read below the oldest such transaction (docs/events.md "Reading in order"), so a test that
 * reads right after a write while a background job (a dispatch, a delivery) happens to be
 * writing would not see it yet. PGlite has one connection: nothing to wait for.
 */
export async function eventsSettled(database: Database, timeoutMs = 5000): Promise<void> {
  if (database.driver !== 'postgres') return;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`.execute(database.db);
    if ((rows[0]?.n ?? 0) === 0 || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every event of the caller's organization matching `query` (`&type=…&agent=…`), following the cursor. */
export async function listAllEvents(
  app: App,
  database: Database,
  query = '',
  headers: Record<string, string> = {},
): Promise<Event[]> {
  await eventsSettled(database);
  const out: Event[] = [];
  let cursor = '';
  for (;;) {
    const res = await app.inject({
      method: 'GET',
      url: `/api/events?limit=1000${query}${cursor ? `&cursor=${cursor}` : ''}`,
      headers,
    });
    if (res.statusCode !== 200) throw new Error(`GET /api/events answered ${res.statusCode}: ${res.body}`);
    const page = successEnvelope(eventList).parse(res.json()).data;
    out.push(...page.events);
    cursor = page.nextCursor;
    if (!page.hasMore) return out;
  }
}
