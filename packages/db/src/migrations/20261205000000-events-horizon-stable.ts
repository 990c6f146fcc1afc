import type { Kysely } from 'kysely';
import { eventsHorizonV2 } from '../functions.ts';

/**
 * `vouch_events_horizon()` becomes stable (functions.ts, eventsHorizonV2): computed in the
 * snapshot of the statement that reads the events below it, so that no event committed meanwhile
 * is passed over by `GET /api/events` or the webhooks' dispatch.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await eventsHorizonV2.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await eventsHorizonV2.drop(db);
}
