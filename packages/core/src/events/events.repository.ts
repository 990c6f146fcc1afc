import { type DB, type Kysely, type RawBuilder, sql } from '@vouch/db';

type Executor = Kysely<DB>;

/** Where and when an organization's events are written; null when events are off (EVENTS=off). */
export interface EventMeta {
  organizationId: string;
  at: Date;
}

/** An event's parts as SQL expressions, so a statement can announce values it computes itself. */
export interface EventParts {
  type: RawBuilder<unknown>;
  agent: RawBuilder<unknown>;
  data: RawBuilder<unknown>;
  /** Only the rows of the source that hold this condition get an event. */
  where?: RawBuilder<unknown>;
}

const whereOf = (parts: EventParts) => (parts.where ? sql`WHERE ${parts.where}` : sql``);

/** A CTE that writes nothing, for statements that include an event CTE while events are off. */
function nothing(name: string): RawBuilder<unknown> {
  return sql`${sql.id(name)} AS (SELECT NULL::bigint AS id WHERE false)`;
}

/**
 * A common table expression named `name` that writes one event of the organization in `meta`
 * per row of `source` (`parts` may name the source's columns), in the statement — hence the
 * transaction — of the change it announces: the event exists exactly when the change does.
 * With `meta` null (events off) it writes nothing. Its rows are the new events' ids.
 *
 *     WITH upd AS (UPDATE … RETURNING …),
 *       ${eventCtes(events, 'hold_events', { type: sql`'authorization.created'`, agent: sql`upd.agent`,
 *         data: sql`jsonb_build_object('authorizationId', upd.id::text, 'amount', upd.amount::text)` }, sql`upd`)}
 *     SELECT … FROM upd
 */
export function eventCtes(
  meta: EventMeta | null,
  name: string,
  parts: EventParts,
  source: RawBuilder<unknown>,
): RawBuilder<unknown> {
  if (!meta) return nothing(name);
  return sql`${sql.id(name)} AS (
      INSERT INTO events (organization_id, type, agent, data, created_at)
      SELECT ${meta.organizationId}::text, ${parts.type}, ${parts.agent}, ${parts.data}, ${meta.at}::timestamptz
      FROM ${source} ${whereOf(parts)}
      RETURNING id
    )`;
}

/**
 * The organizations that hear of a shared agent (its score, grade, sanctions, verifications):
 * the one that registered it and every one that keeps a budget for it (docs/events.md).
 * `agent` is an SQL expression (a column of the enclosing query); the rows have one column,
 * `organization_id`.
 */
export function recipientsOf(agent: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(
      SELECT ra.organization_id FROM agents ra WHERE ra.address = ${agent} AND ra.organization_id IS NOT NULL
      UNION
      SELECT rb.organization_id FROM budgets rb WHERE rb.agent = ${agent}
    )`;
}

/**
 * Like `eventCtes` for an event about a shared agent: one event per row of `source` for each
 * organization that hears of the agent `parts.agent` names (`recipientsOf`), each its own copy.
 * With `at` null (events off) it writes nothing.
 */
export function agentEventCtes(
  at: Date | null,
  name: string,
  parts: EventParts,
  source: RawBuilder<unknown>,
): RawBuilder<unknown> {
  if (!at) return nothing(name);
  return sql`${sql.id(name)} AS (
      INSERT INTO events (organization_id, type, agent, data, created_at)
      SELECT r.organization_id, ${parts.type}, ${parts.agent}, ${parts.data}, ${at}::timestamptz
      FROM ${source} CROSS JOIN LATERAL ${recipientsOf(parts.agent)} AS r ${whereOf(parts)}
      RETURNING id
    )`;
}

/** Writes one event whose parts are all known; run it inside the transaction of the change it announces. */
export async function insertEvent(
  db: Executor,
  meta: EventMeta,
  type: string,
  agent: string | null,
  data: Record<string, unknown>,
): Promise<string> {
  const row = await db
    .insertInto('events')
    .values({ organization_id: meta.organizationId, type, agent, data: JSON.stringify(data), created_at: meta.at })
    .returning(sql<string>`id::text`.as('id'))
    .executeTakeFirstOrThrow();
  return row.id;
}

/** A position in the order events are read in: the writing transaction, then the id. */
export interface Position {
  txid: string;
  id: string;
}

export const START: Position = { txid: '0', id: '0' };

/** Every transaction of this database before this one has finished: events below it will never change. */
const horizon = sql`vouch_events_horizon()`;

export interface EventFilter {
  organizationId: string;
  after: Position;
  since?: Date | undefined;
  type?: string | undefined;
  agent?: string | undefined;
}

export interface EventRow {
  id: string;
  txid: string;
  organization_id: string;
  type: string;
  agent: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

/** The columns of an `EventRow`, of the events aliased `e`. */
const eventColumns = sql`e.id::text AS id, e.txid::text AS txid, e.organization_id, e.type, e.agent, e.data, e.created_at`;

/** One event of the organization, by its sequence number. */
export async function findEvent(db: Executor, organizationId: string, id: string): Promise<EventRow | undefined> {
  const result = await sql<EventRow>`
    SELECT ${eventColumns} FROM events e WHERE e.id = ${id}::bigint AND e.organization_id = ${organizationId}`.execute(
    db,
  );
  return result.rows[0];
}

/**
 * The organization's events after `after`, in order, of transactions that have all finished
 * (`limit + 1` rows tell whether there is more), and the horizon they were read below.
 */
export async function listEvents(
  db: Executor,
  filter: EventFilter,
  limit: number,
): Promise<{ rows: EventRow[]; horizon: string; nextTransaction: string }> {
  const conditions = [
    sql`e.organization_id = ${filter.organizationId}`,
    sql`(e.txid, e.id) > (${filter.after.txid}::xid8, ${filter.after.id}::bigint)`,
    sql`e.txid < h.xmin`,
  ];
  if (filter.since) conditions.push(sql`e.created_at >= ${filter.since}`);
  if (filter.type) conditions.push(sql`e.type = ${filter.type}`);
  if (filter.agent) conditions.push(sql`e.agent = ${filter.agent}`);
  const result = await sql<EventRow & { horizon: string; next_transaction: string }>`
    WITH h AS (SELECT ${horizon} AS xmin, pg_snapshot_xmax(pg_current_snapshot()) AS next_transaction)
    SELECT ${eventColumns}, h.xmin::text AS horizon, h.next_transaction::text AS next_transaction
    FROM h LEFT JOIN LATERAL (
      SELECT e.* FROM events e WHERE ${sql.join(conditions, sql` AND `)}
      ORDER BY e.txid, e.id LIMIT ${limit + 1}
    ) e ON true`.execute(db);
  const first = result.rows[0];
  const rows = result.rows.filter((r) => r.id !== null).map(({ horizon: _h, next_transaction: _n, ...row }) => row);
  return { rows, horizon: first?.horizon ?? '0', nextTransaction: first?.next_transaction ?? '0' };
}

/**
 * The newest transaction id kept with an event or a dispatch position, when it is not below the
 * server's next one (else null). Events are listed and fanned out in the order of these ids, and
 * they are the server's own: a logical dump restored into another server starts them again lower,
 * so every event written there would sort before the restored ones, and every cursor and dispatch
 * position would stop short of it (docs/events.md, "Moving the database"). The newest of each
 * organization is one step down its index.
 */
export async function transactionIdsAhead(db: Executor): Promise<{ stored: string; next: string } | null> {
  const { rows } = await sql<{ stored: string | null; next: string }>`
    SELECT greatest(
        (SELECT e.txid FROM organizations o
          CROSS JOIN LATERAL (SELECT txid FROM events WHERE organization_id = o.id ORDER BY txid DESC LIMIT 1) AS e
          ORDER BY e.txid DESC LIMIT 1),
        (SELECT txid FROM event_dispatch ORDER BY txid DESC LIMIT 1))::text AS stored,
      pg_snapshot_xmax(pg_current_snapshot())::text AS next`.execute(db);
  const row = rows[0];
  return row?.stored != null && BigInt(row.stored) >= BigInt(row.next) ? { stored: row.stored, next: row.next } : null;
}

/**
 * One dispatcher at a time, for the rest of the transaction: the lock is an advisory one, so the
 * transaction takes no transaction id (which would hold back the events' horizon for every
 * reader) until it writes.
 */
export async function lockDispatch(db: Executor): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(740012)`.execute(db);
}

/**
 * Starts fanning out the organization's events from now on, as its first webhook is created: its
 * dispatch position moves to the horizon unless it has webhooks already (whose position must stay).
 * Webhooks of one organization are created one at a time from here to their commit: the statement
 * below then runs in a snapshot that sees the webhook created just before, where it would otherwise
 * move the position of that first webhook on past events it is owed.
 */
export async function startDispatch(db: Executor, organizationId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(740013, hashtext(${organizationId}))`.execute(db);
  await sql`
    INSERT INTO event_dispatch (organization_id, txid, event_id)
    VALUES (${organizationId}, ${horizon}, 0)
    ON CONFLICT (organization_id) DO UPDATE SET txid = excluded.txid, event_id = 0
      WHERE NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.organization_id = excluded.organization_id)`.execute(db);
}

/**
 * Fans the next events (at most `limit` per organization) of the organizations that have webhooks
 * out to their enabled subscriptions — one pending delivery per event and endpoint; an endpoint
 * hears of events written after it was created — and moves each organization's dispatch position
 * past them, in one statement. Organizations without webhooks are never read. Returns how many
 * events it took, the most of one organization, the deliveries it created, and whether events of
 * theirs have committed above the horizon: held back by an older transaction still running.
 */
export async function fanOut(
  db: Executor,
  limit: number,
  now: Date,
): Promise<{ events: number; fullest: number; deliveries: Array<{ id: string; run: number }>; held: boolean }> {
  const result = await sql<{
    events: number;
    fullest: number | null;
    deliveries: Array<{ id: string; run: number }> | null;
    held: boolean;
  }>`
    WITH h AS (SELECT ${horizon} AS xmin), dispatching AS (
      SELECT d.* FROM event_dispatch d
      WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.organization_id = d.organization_id)
    ), batch AS (
      SELECT e.id, e.txid, e.organization_id, e.type, e.created_at
      FROM dispatching d CROSS JOIN h CROSS JOIN LATERAL (
        SELECT e.id, e.txid, e.organization_id, e.type, e.created_at FROM events e
        WHERE e.organization_id = d.organization_id AND (e.txid, e.id) > (d.txid, d.event_id) AND e.txid < h.xmin
        ORDER BY e.txid, e.id LIMIT ${limit}
      ) e
    ), created AS (
      INSERT INTO webhook_deliveries (organization_id, webhook_id, event_id, next_attempt_at, created_at)
      SELECT b.organization_id, w.id, b.id, ${now}::timestamptz, ${now}::timestamptz
      FROM batch b JOIN webhooks w ON w.organization_id = b.organization_id AND w.enabled
        AND b.type = ANY (w.event_types) AND w.created_at <= b.created_at
      ORDER BY b.txid, b.id
      ON CONFLICT (webhook_id, event_id) DO NOTHING
      RETURNING id, run
    ), last AS (
      SELECT DISTINCT ON (organization_id) organization_id, txid, id, count(*) OVER (PARTITION BY organization_id) AS n
      FROM batch ORDER BY organization_id, txid DESC, id DESC
    ), moved AS (
      UPDATE event_dispatch d SET txid = last.txid, event_id = last.id
      FROM last WHERE d.organization_id = last.organization_id RETURNING d.organization_id
    )
    SELECT (SELECT count(*)::int FROM batch) AS events, (SELECT max(n)::int FROM last) AS fullest,
      (SELECT json_agg(json_build_object('id', id::text, 'run', run) ORDER BY id) FROM created) AS deliveries,
      EXISTS (
        SELECT 1 FROM dispatching d CROSS JOIN h CROSS JOIN events e
        WHERE e.organization_id = d.organization_id AND (e.txid, e.id) > (d.txid, d.event_id) AND e.txid >= h.xmin
      ) AS held`.execute(db);
  const row = result.rows[0];
  return {
    events: row?.events ?? 0,
    fullest: row?.fullest ?? 0,
    deliveries: row?.deliveries ?? [],
    held: row?.held ?? false,
  };
}

/**
 * Deletes events written before `cutoff` (their deliveries and attempts go with them), at most
 * `batch` at a time. Ids follow the order events were written, so the oldest are the lowest:
 * the first event to keep is found by a short walk of the primary key.
 */
export async function purgeBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  const result = await sql<{ n: number }>`
    WITH keep AS (
      SELECT coalesce(
        (SELECT id FROM events WHERE created_at >= ${cutoff} ORDER BY id LIMIT 1),
        (SELECT max(id) + 1 FROM events),
        0) AS id
    ), gone AS (
      DELETE FROM events WHERE id IN (
        SELECT e.id FROM events e, keep WHERE e.id < keep.id ORDER BY e.id LIMIT ${batch}
      ) RETURNING 1
    )
    SELECT count(*)::int AS n FROM gone`.execute(db);
  return result.rows[0]?.n ?? 0;
}
