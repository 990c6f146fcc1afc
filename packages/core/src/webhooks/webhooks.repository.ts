import { type DB, type DeliveryStatus, type Kysely, sql, type WebhookRow } from '@vouch/db';
import { FAILURE_STREAK_GAP_MS, type PreviousSecret } from './webhooks.model.ts';

type Executor = Kysely<DB>;

export function insertWebhook(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    url: string;
    description: string | null;
    eventTypes: string[];
    secret: string;
    now: Date;
  },
): Promise<WebhookRow> {
  return db
    .insertInto('webhooks')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      url: v.url,
      description: v.description,
      event_types: v.eventTypes,
      secret: v.secret,
      created_at: v.now,
      updated_at: v.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The endpoint. With `lock`, its row is held until the transaction ends: `update` as an update of
 * it would, `key` as a row referring to it would (a delete in progress is waited for, and then the
 * endpoint is not found).
 */
export function findWebhook(db: Executor, organizationId: string, id: string, lock?: 'update' | 'key') {
  const query = db
    .selectFrom('webhooks')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id);
  if (lock === 'update') return query.forNoKeyUpdate().executeTakeFirst();
  if (lock === 'key') return query.forKeyShare().executeTakeFirst();
  return query.executeTakeFirst();
}

export function listWebhooks(db: Executor, organizationId: string) {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export interface WebhookPatch {
  url?: string | undefined;
  eventTypes?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

/** Changes an endpoint; turning it on again or changing its address clears its failure record (and the former its disabling). */
export function updateWebhook(db: Executor, organizationId: string, id: string, patch: WebhookPatch, now: Date) {
  return db
    .updateTable('webhooks')
    .set({
      ...(patch.url !== undefined && { url: patch.url }),
      ...(patch.eventTypes !== undefined && { event_types: patch.eventTypes }),
      ...(patch.description !== undefined && { description: patch.description }),
      ...(patch.enabled === true && {
        enabled: sql<boolean>`true`,
        disabled_at: null,
        disabled_reason: null,
      }),
      // Turned on again, or moved to another address (another endpoint): a clean failure record.
      ...((patch.enabled === true || patch.url !== undefined) && {
        failing_since: sql<Date | null>`CASE WHEN ${patch.enabled === true} AND NOT enabled THEN NULL
          WHEN ${patch.url ?? null}::text IS NOT NULL AND url <> ${patch.url ?? null}::text THEN NULL
          ELSE failing_since END`,
      }),
      ...(patch.enabled === false && {
        enabled: sql<boolean>`false`,
        disabled_at: sql<Date>`CASE WHEN enabled THEN ${now}::timestamptz ELSE disabled_at END`,
        disabled_reason: sql<string>`CASE WHEN enabled THEN 'disabled by a client' ELSE disabled_reason END`,
      }),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function countWebhooks(db: Executor, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function deleteWebhook(db: Executor, organizationId: string, id: string) {
  return db
    .deleteFrom('webhooks')
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** A new secret, and the previous secrets that still sign (the one it replaces among them, if it does). */
export function setSecrets(
  db: Executor,
  organizationId: string,
  id: string,
  secret: string,
  previous: readonly PreviousSecret[],
  now: Date,
) {
  return db
    .updateTable('webhooks')
    .set({
      secret,
      previous_secrets: JSON.stringify(
        previous.map((p) => ({ secret: p.secret, expiresAt: p.expiresAt.toISOString() })),
      ),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The previous secrets of a row as stored (`previous_secrets`), with their times as dates. */
export function previousSecretsOf(row: { previous_secrets: Array<{ secret: string; expiresAt: string }> }) {
  return row.previous_secrets.map((p) => ({ secret: p.secret, expiresAt: new Date(p.expiresAt) }));
}

/** A pending delivery of an event to one endpoint, created directly (a test event). */
export async function insertDelivery(
  db: Executor,
  v: { organizationId: string; webhookId: string; eventId: string; now: Date },
): Promise<{ id: string; run: number }> {
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      organization_id: v.organizationId,
      webhook_id: v.webhookId,
      event_id: v.eventId,
      next_attempt_at: v.now,
      created_at: v.now,
    })
    .returning([sql<string>`id::text`.as('id'), 'run'])
    .executeTakeFirstOrThrow();
  return row;
}

/** Everything one attempt needs: the delivery, its endpoint and its event. */
export interface DeliveryTarget {
  id: string;
  run: number;
  status: DeliveryStatus;
  attempts: number;
  organization_id: string;
  webhook_id: string;
  url: string;
  enabled: boolean;
  secret: string;
  previous_secrets: Array<{ secret: string; expiresAt: string }>;
  event_id: string;
  type: string;
  agent: string | null;
  data: Record<string, unknown>;
  created_at: Date;
  /** How long, by the database's time, before the next attempt is due (0: it is). */
  wait_ms: number;
}

export async function deliveryTarget(db: Executor, deliveryId: string): Promise<DeliveryTarget | undefined> {
  const result = await sql<DeliveryTarget>`
    SELECT d.id::text AS id, d.run, d.status, d.attempts, d.organization_id, d.webhook_id,
      w.url, w.enabled, w.secret, w.previous_secrets,
      e.id::text AS event_id, e.type, e.agent, e.data, e.created_at,
      greatest(0, ceil(extract(epoch FROM d.not_before - clock_timestamp()) * 1000))::int AS wait_ms
    FROM webhook_deliveries d
    JOIN webhooks w ON w.id = d.webhook_id
    JOIN events e ON e.id = d.event_id
    WHERE d.id = ${deliveryId}::bigint`.execute(db);
  return result.rows[0];
}

/** A delivery's status and number of attempts, if it is there. */
export function deliveryState(db: Executor, deliveryId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['status', 'attempts'])
    .where('id', '=', deliveryId)
    .executeTakeFirst();
}

export interface AttemptRecord {
  deliveryId: string;
  run: number;
  attempt: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** `succeeded`, `failed` (no attempt left) or `pending` (another attempt at `nextAttemptAt`). */
  status: DeliveryStatus;
  /** When the next attempt is due: at `nextAttemptAt` by the service's clock, `waitMs` from now by the database's. */
  nextAttemptAt: Date | null;
  waitMs: number | null;
  now: Date;
}

/**
 * Stores one attempt and its outcome on the delivery, if the delivery is still in the run that
 * made it (a retry may have started another) and no other attempt was stored since it was read
 * (`attempt` is the next one): two runs of one job that sent at once store one attempt, and only
 * that one goes on with the schedule. Returns whether it was stored.
 */
export async function recordAttempt(db: Executor, v: AttemptRecord): Promise<boolean> {
  const result = await sql<{ id: string }>`
    WITH upd AS (
      UPDATE webhook_deliveries SET
        status = ${v.status},
        attempts = attempts + 1,
        next_attempt_at = ${v.nextAttemptAt}::timestamptz,
        not_before = clock_timestamp() + ${v.waitMs}::int * interval '1 millisecond',
        last_status_code = ${v.statusCode}::int,
        last_error = ${v.error}::text,
        last_attempt_at = ${v.now}::timestamptz,
        delivered_at = CASE WHEN ${v.status} = 'succeeded' THEN ${v.now}::timestamptz ELSE delivered_at END
      WHERE id = ${v.deliveryId}::bigint AND run = ${v.run} AND status = 'pending' AND attempts = ${v.attempt - 1}
      RETURNING id
    ), attempt AS (
      INSERT INTO webhook_attempts (delivery_id, attempt, status_code, duration_ms, error, created_at)
      SELECT id, ${v.attempt}, ${v.statusCode}::int, ${v.durationMs}, ${v.error}::text, ${v.now}::timestamptz FROM upd
    )
    SELECT id::text AS id FROM upd`.execute(db);
  return result.rows.length === 1;
}

/**
 * Locks the endpoint's row for the rest of the transaction, as an update of it would (new
 * deliveries' foreign keys still go through). Whatever changes an endpoint and its deliveries in
 * one transaction takes the endpoint's row first (disabling, deleting, storing an attempt), so two
 * of them wait for each other instead of deadlocking.
 */
export async function lockEndpoint(db: Executor, webhookId: string): Promise<void> {
  await db.selectFrom('webhooks').select('id').where('id', '=', webhookId).forNoKeyUpdate().execute();
}

/**
 * Keeps the endpoint's failure record: a success clears it; a failure starts it unless it is
 * running, that is unless the endpoint's previous failure was less than `FAILURE_STREAK_GAP_MS`
 * ago (failures that stopped coming for longer were a quiet spell, not days of failing). Returns
 * the endpoint as it now is.
 */
export function markEndpoint(db: Executor, webhookId: string, succeeded: boolean, now: Date) {
  const streakSince = new Date(now.getTime() - FAILURE_STREAK_GAP_MS);
  return db
    .updateTable('webhooks')
    .set(
      succeeded
        ? { failing_since: null, last_success_at: now }
        : {
            failing_since: sql<Date>`CASE WHEN failing_since IS NOT NULL AND last_failure_at >= ${streakSince}::timestamptz
              THEN failing_since ELSE ${now}::timestamptz END`,
            last_failure_at: now,
          },
    )
    .where('id', '=', webhookId)
    .returning(['id', 'organization_id', 'url', 'enabled', 'failing_since'])
    .executeTakeFirst();
}

/** Turns an enabled endpoint off and fails its pending deliveries; returns it if this call disabled it. */
export async function disableEndpoint(db: Executor, webhookId: string, reason: string, now: Date) {
  const row = await db
    .updateTable('webhooks')
    .set({ enabled: false, disabled_at: now, disabled_reason: reason, updated_at: now })
    .where('id', '=', webhookId)
    .where('enabled', '=', true)
    .returning(['id', 'organization_id', 'url', 'failing_since'])
    .executeTakeFirst();
  if (row) await failPending(db, webhookId, 'the endpoint was disabled');
  return row;
}

/** Fails the endpoint's pending deliveries (it was disabled): nothing more is sent to it. */
export async function failPending(db: Executor, webhookId: string, error: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, last_error: error })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .execute();
}

/** Fails one pending delivery of this run while its endpoint is disabled; false when it is not (any more). */
export async function failIfDisabled(db: Executor, deliveryId: string, run: number, error: string): Promise<boolean> {
  const result = await sql`
    UPDATE webhook_deliveries d SET status = 'failed', next_attempt_at = NULL, last_error = ${error}
    WHERE d.id = ${deliveryId}::bigint AND d.run = ${run} AND d.status = 'pending'
      AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND NOT w.enabled)`.execute(db);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/** Sends a delivery again in a new run (its attempts start over); returns its id and run. */
export async function restartDelivery(
  db: Executor,
  webhookId: string,
  deliveryId: string,
  now: Date,
): Promise<{ id: string; run: number } | undefined> {
  const result = await sql<{ id: string; run: number }>`
    UPDATE webhook_deliveries SET status = 'pending', run = run + 1, attempts = 0, next_attempt_at = ${now}::timestamptz,
      not_before = NULL
    WHERE id = ${deliveryId}::bigint AND webhook_id = ${webhookId}
    RETURNING id::text AS id, run`.execute(db);
  return result.rows[0];
}

/** Replay at most this many events per call. */
export const REPLAY_MAX = 10_000;

/**
 * Sends the organization's events of the endpoint's types written in [since, until) (until null:
 * up to now) to it again: a delivery for each event it has none of, and a new run of each failed
 * one; delivered and pending ones are left alone (`skipped`, counted over the whole range). At
 * most REPLAY_MAX events to send, oldest first: the ones left alone are not among them, so a call
 * again from the last one's second goes on past them, however many share that second.
 */
export async function replay(
  db: Executor,
  v: { organizationId: string; webhookId: string; eventTypes: string[]; since: Date; until: Date | null; now: Date },
): Promise<{
  events: number;
  more: boolean;
  skipped: number;
  deliveries: Array<{ id: string; run: number }>;
  last: Date | null;
}> {
  const inRange = sql`organization_id = ${v.organizationId} AND created_at >= ${v.since}
        ${v.until ? sql`AND created_at < ${v.until}` : sql``}
        AND type = ANY (${v.eventTypes}::text[])`;
  const deliveryOf = sql`SELECT d.status FROM webhook_deliveries d WHERE d.webhook_id = ${v.webhookId} AND d.event_id = e.id`;
  const result = await sql<{
    events: number;
    more: boolean;
    skipped: number;
    deliveries: Array<{ id: string; run: number }> | null;
    last: Date | null;
  }>`
    WITH candidates AS (
      -- One more than a call sends: whether more remain after this call. Held against the purge
      -- (the oldest events of a range are the ones it deletes): an event it is deleting is waited
      -- for and left out, where the delivery's foreign key would otherwise fail the whole replay.
      SELECT e.id, e.txid, e.created_at FROM events e
      WHERE ${inRange} AND coalesce((${deliveryOf}), 'failed') = 'failed'
      ORDER BY e.created_at, e.id LIMIT ${REPLAY_MAX + 1}
      FOR KEY SHARE OF e
    ), ev AS (
      SELECT * FROM candidates ORDER BY created_at, id LIMIT ${REPLAY_MAX}
    ), sent AS (
      INSERT INTO webhook_deliveries (organization_id, webhook_id, event_id, next_attempt_at, created_at)
      SELECT ${v.organizationId}, ${v.webhookId}, ev.id, ${v.now}::timestamptz, ${v.now}::timestamptz FROM ev
      -- The fan-out's order (events.repository's fanOut): a delivery it is inserting for the same
      -- event makes this insert wait for its transaction, so in any other order the two could
      -- each wait for the other (a deadlock).
      ORDER BY ev.txid, ev.id
      ON CONFLICT (webhook_id, event_id) DO UPDATE SET
        status = 'pending', run = webhook_deliveries.run + 1, attempts = 0, next_attempt_at = excluded.next_attempt_at,
        not_before = NULL
        WHERE webhook_deliveries.status = 'failed'
      RETURNING id, run
    )
    SELECT (SELECT count(*)::int FROM ev) AS events, (SELECT count(*) > ${REPLAY_MAX} FROM candidates) AS more,
      (SELECT count(*)::int FROM events e WHERE ${inRange} AND (${deliveryOf}) <> 'failed') AS skipped,
      (SELECT json_agg(json_build_object('id', id::text, 'run', run) ORDER BY id) FROM sent) AS deliveries,
      (SELECT max(created_at) FROM ev) AS last`.execute(db);
  const row = result.rows[0];
  return {
    events: row?.events ?? 0,
    more: row?.more ?? false,
    skipped: row?.skipped ?? 0,
    deliveries: row?.deliveries ?? [],
    last: row?.last ? new Date(row.last) : null,
  };
}

/** Pending deliveries whose attempt was due before `dueBefore`: their job may have been lost. */
export async function stranded(db: Executor, dueBefore: Date, limit: number) {
  const result = await sql<{ id: string; run: number }>`
    SELECT id::text AS id, run FROM webhook_deliveries
    WHERE status = 'pending' AND next_attempt_at < ${dueBefore}
    ORDER BY next_attempt_at LIMIT ${limit}`.execute(db);
  return result.rows;
}

export interface DeliveryListRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

/** A page of the endpoint's deliveries, newest first (`limit + 1` rows tell whether there is more). */
export async function listDeliveries(
  db: Executor,
  v: { webhookId: string; beforeId?: string | undefined; status?: DeliveryStatus | undefined; limit: number },
): Promise<DeliveryListRow[]> {
  const result = await sql<DeliveryListRow>`
    SELECT d.id::text AS id, d.webhook_id, d.event_id::text AS event_id, e.type AS event_type, d.status, d.attempts,
      d.next_attempt_at, d.last_status_code, d.last_error, d.delivered_at, d.created_at
    FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.webhook_id = ${v.webhookId}
      ${v.beforeId ? sql`AND d.id < ${v.beforeId}::bigint` : sql``}
      ${v.status ? sql`AND d.status = ${v.status}` : sql``}
    ORDER BY d.id DESC LIMIT ${v.limit + 1}`.execute(db);
  return result.rows;
}

/** The last `perDelivery` attempts of each delivery, oldest first. */
export async function attemptsOf(db: Executor, deliveryIds: string[], perDelivery: number) {
  if (deliveryIds.length === 0) return [];
  const result = await sql<{
    delivery_id: string;
    attempt: number;
    status_code: number | null;
    duration_ms: number;
    error: string | null;
    created_at: Date;
  }>`
    SELECT x.delivery_id::text AS delivery_id, x.attempt, x.status_code, x.duration_ms, x.error, x.created_at
    FROM unnest(${deliveryIds}::bigint[]) AS d(id)
    CROSS JOIN LATERAL (
      SELECT * FROM webhook_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT ${perDelivery}
    ) x
    ORDER BY x.delivery_id, x.id`.execute(db);
  return result.rows;
}

/** One delivery of the endpoint, as listed. */
export async function findDelivery(db: Executor, webhookId: string, deliveryId: string) {
  const rows = await listDeliveries(db, {
    webhookId,
    beforeId: (BigInt(deliveryId) + 1n).toString(),
    limit: 0,
  });
  return rows.find((r) => r.id === deliveryId);
}
