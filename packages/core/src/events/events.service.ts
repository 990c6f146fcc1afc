import type { DB, Kysely } from '@vouch/db';
import { type JobRunner, jobs } from '@vouch/jobs';
import {
  type Event,
  type EventData,
  type EventList,
  type EventsQuery,
  type EventType,
  eventCatalogue,
} from '@vouch/schemas';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { cursorNotIssued, cursorText, encodeCursor } from '../shared/cursor.ts';
import { NotFoundError } from '../shared/errors.ts';
import * as repo from './events.repository.ts';

export interface EventsDeps {
  db: Kysely<DB>;
  clock: Clock;
  runner: JobRunner;
  /** EVENTS: off writes no event at all. */
  enabled: boolean;
  /** EVENTS_RETENTION_DAYS. */
  retentionDays?: number;
  onError?: (error: unknown, context: Record<string, unknown>) => void;
}

/** After a commit that wrote events, the fan-out is asked for at most this often per process (the sweep catches up anyway). */
const POKE_EVERY_MS = 100;
const PURGE_BATCH = 10_000;
const DAY_MS = 86_400_000;

/** `evt_<id>`: an event's public id, also the `webhook-id` of its deliveries. */
export const publicEventId = (id: string | number) => `evt_${id}`;
/** The sequence number of a public event id (`eventId` of @vouch/schemas has checked its form). */
const sequenceOf = (publicId: string) => publicId.slice('evt_'.length);

const positionCursor = (position: repo.Position) => encodeCursor(`${position.txid}.${position.id}`);

function positionOf(cursor: string): repo.Position {
  const match = /^(\d{1,20})\.(\d{1,19})$/.exec(cursorText(cursor));
  if (!match || BigInt(match[1] as string) >= 2n ** 64n || BigInt(match[2] as string) >= 2n ** 63n) {
    throw cursorNotIssued();
  }
  // Digits as given out: a leading zero would name the same position in another text.
  const position = { txid: match[1] as string, id: match[2] as string };
  if (/^0\d/.test(position.txid) || /^0\d/.test(position.id)) throw cursorNotIssued();
  return position;
}

/** The later of two positions. */
function later(a: repo.Position, b: repo.Position): repo.Position {
  const [ta, tb] = [BigInt(a.txid), BigInt(b.txid)];
  if (ta !== tb) return ta > tb ? a : b;
  return BigInt(a.id) >= BigInt(b.id) ? a : b;
}

export function toEvent(row: repo.EventRow): Event {
  return {
    id: publicEventId(row.id),
    sequence: Number(row.id),
    type: row.type as EventType,
    organizationId: row.organization_id,
    agent: row.agent,
    createdAt: toUnixSeconds(row.created_at),
    data: row.data,
  };
}

/**
 * The outbox: events are written in the transaction of the change they announce (`append`, or
 * the `eventCtes` of a statement that announces its own changes), read in order
 * (`list`), and fanned out to webhooks by the `webhooks.dispatch` job, which a commit asks for
 * (`committed`) and the periodic sweep runs anyway.
 */
export function createEventsService({ db, clock, runner, enabled, retentionDays = 30, onError }: EventsDeps) {
  let poking = false;
  let pokedAgain = false;

  function committed(): void {
    if (!enabled) return;
    if (poking) {
      pokedAgain = true;
      return;
    }
    poking = true;
    runner
      .enqueue(jobs.dispatchEvents, {}, { dedupeId: 'webhooks.dispatch' })
      .catch((error) => onError?.(error, { job: jobs.dispatchEvents.name }))
      .finally(() => {
        setTimeout(() => {
          poking = false;
          if (pokedAgain) {
            pokedAgain = false;
            committed();
          }
        }, POKE_EVERY_MS).unref();
      });
  }

  return {
    enabled,

    /**
     * Refuses to go on when the database's transaction ids are behind those kept with its events
     * (restored into another server): events written now would be listed before older ones and
     * webhooks would stop, with nothing said. Run at start.
     */
    async assertTransactionIdsAhead(): Promise<void> {
      const ahead = await repo.transactionIdsAhead(db);
      if (!ahead) return;
      throw new Error(
        `the database's next transaction id (${ahead.next}) is not past those kept with its events (${ahead.stored}): ` +
          'it was restored into another PostgreSQL server, whose ids start lower; raise its transaction id epoch ' +
          'with pg_resetwal -e (docs/events.md, "Moving the database") before starting Vouch on it',
      );
    },

    /** Where and when the actor's organization's events go, for a statement's `eventCtes`; null when events are off. */
    meta(actor: Actor, at: Date = clock()): repo.EventMeta | null {
      return enabled ? { organizationId: actor.organizationId, at } : null;
    },

    /** When events about shared agents are written (`agentEventCtes`); null when events are off. */
    stamp(at: Date = clock()): Date | null {
      return enabled ? at : null;
    },

    /**
     * Writes one event of the actor's organization in the transaction of `executor` (the change it
     * announces), after checking its data against the catalogue. Call `committed()` once that
     * transaction has committed. Returns the event's id, or null when events are off.
     */
    async append<T extends EventType>(
      executor: Kysely<DB>,
      actor: Actor,
      type: T,
      agent: string | null,
      data: EventData<T>,
      at: Date = clock(),
    ): Promise<string | null> {
      if (!enabled) return null;
      const checked = eventCatalogue[type].data.parse(data) as Record<string, unknown>;
      return repo.insertEvent(executor, { organizationId: actor.organizationId, at }, type, agent, checked);
    },

    /**
     * Events were committed: ask for their fan-out to webhooks now rather than at the next sweep.
     * At most one request per POKE_EVERY_MS per process (the job is deduplicated too); never fails.
     */
    committed,

    /**
     * The organization's events in the order they were written, after `cursor` (or from `since`,
     * or from the oldest kept). Only events of transactions that have all finished are shown, so
     * a later page never holds an event that belongs before a cursor already given out.
     */
    async list(actor: Actor, query: EventsQuery): Promise<EventList> {
      const after = query.cursor === undefined ? repo.START : positionOf(query.cursor);
      const { rows, horizon, nextTransaction } = await repo.listEvents(
        db,
        {
          organizationId: actor.organizationId,
          after,
          since: query.since === undefined ? undefined : new Date(query.since * 1000),
          type: query.type,
          agent: query.agent,
        },
        query.limit,
      );
      // Every cursor given out is at or below a horizon, which is at most the next transaction id
      // then (its value when none runs), and that id only grows: a cursor beyond it now was never
      // given out, and would answer empty pages until ids got there.
      if (BigInt(after.txid) > BigInt(nextTransaction)) throw cursorNotIssued();
      const page = rows.slice(0, query.limit);
      const hasMore = rows.length > query.limit;
      const last = page[page.length - 1];
      // A full page continues after its last event; otherwise everything below the horizon has
      // been seen, and the next poll starts there.
      const next = hasMore && last ? { txid: last.txid, id: last.id } : later(after, { txid: horizon, id: '0' });
      return { events: page.map(toEvent), nextCursor: positionCursor(next), hasMore };
    },

    /**
     * One event of the actor's organization by its id (`evt_<sequence>`, the `webhook-id` of its
     * deliveries), as soon as its transaction has committed; 404 once purged.
     */
    async get(actor: Actor, id: string): Promise<Event> {
      const row = await repo.findEvent(db, actor.organizationId, sequenceOf(id));
      if (!row) throw new NotFoundError(`event ${id} is not known in this organization`);
      return toEvent(row);
    },

    /** Deletes events older than the retention (EVENTS_RETENTION_DAYS), with their deliveries. */
    async purge(): Promise<number> {
      const cutoff = new Date(clock().getTime() - retentionDays * DAY_MS);
      let purged = 0;
      for (;;) {
        const n = await repo.purgeBefore(db, cutoff, PURGE_BATCH);
        purged += n;
        if (n < PURGE_BATCH) return purged;
      }
    },
  };
}

export type EventsService = ReturnType<typeof createEventsService>;
