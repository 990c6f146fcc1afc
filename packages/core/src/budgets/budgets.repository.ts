import {
  type AuthorizationRow,
  type BudgetRow,
  type DB,
  type Kysely,
  type RawBuilder,
  runPrepared,
  sql,
} from '@vouch/db';
import { type AuditMeta, auditCtes } from '../audit/audit.repository.ts';
import { type EventMeta, eventCtes } from '../events/events.repository.ts';
import type { ScreeningRefusal } from '../sanctions/sanctions.model.ts';
import { screeningRefusalSql } from '../sanctions/sanctions.repository.ts';
import { statusAtSql } from '../shared/lapse.ts';

/** The statuses of a hold that end at its `expiresAt` (the sweep marks them expired; reads see it at once). */
export const LAPSING_HOLD = ['held', 'pending_approval'] as const;

type Executor = Kysely<DB>;

/** A budget and its agent's screening: why the sanctions screen refuses every payment of the agent (null: it passes). */
export type BudgetWithStanding = BudgetRow & { screening: ScreeningRefusal | null };

/** Which budget: an organization's, of an agent, in an asset ('' for the default unit). */
export interface BudgetKey {
  organizationId: string;
  agent: string;
  asset: string;
}

/** The agent's screening (no counterparty): what refuses every payment of the agent. */
const agentScreening = (agent: string | RawBuilder<unknown>) => screeningRefusalSql(agent, null);

/** The budget, and the agent's screening (which, unless null, refuses every spend). */
export function findBudget(db: Executor, key: BudgetKey): Promise<BudgetWithStanding | undefined> {
  return db
    .selectFrom('budgets')
    .selectAll()
    .select(agentScreening(sql.ref('budgets.agent')).as('screening'))
    .where('organization_id', '=', key.organizationId)
    .where('agent', '=', key.agent)
    .where('asset', '=', key.asset)
    .executeTakeFirst();
}

/**
 * Every budget of the agent (every organization's, every asset) and the agent's standing, in one
 * read: what the read cache keeps per agent, so that a change of the agent (its owner, the
 * sanctions list) drops them all at once.
 */
export async function findAgentBudgets(
  db: Executor,
  agent: string,
): Promise<{ screening: ScreeningRefusal | null; rows: BudgetRow[] }> {
  const result = await sql<BudgetWithStanding>`
    SELECT b.*, s.screening FROM (SELECT ${agentScreening(agent)} AS screening) AS s
    LEFT JOIN budgets b ON b.agent = ${agent}`.execute(db);
  const first = result.rows[0];
  return {
    screening: first?.screening ?? null,
    rows: result.rows.filter((r) => r.organization_id !== null).map(({ screening: _s, ...row }) => row as BudgetRow),
  };
}

export interface LimitsPatch {
  dailyLimit?: string | undefined;
  monthlyLimit?: string | undefined;
  perTxLimit?: string | undefined;
}

/**
 * First set: the daily and monthly limits, and the per-transaction limit (the daily one when not
 * given). A concurrent first set of the same budget updates instead, as a later set: it changes
 * the limits it names and keeps a per-transaction limit it does not name (defaulting it there
 * would replace the one the other set just gave).
 */
export function insertBudget(
  db: Executor,
  key: BudgetKey,
  limits: { dailyLimit: string; monthlyLimit: string; perTxLimit?: string | undefined },
  windows: { day: Date; month: Date; now: Date },
): Promise<BudgetRow> {
  return db
    .insertInto('budgets')
    .values({
      organization_id: key.organizationId,
      agent: key.agent,
      asset: key.asset,
      daily_limit: limits.dailyLimit,
      monthly_limit: limits.monthlyLimit,
      per_tx_limit: limits.perTxLimit ?? limits.dailyLimit,
      daily_spent: '0',
      monthly_spent: '0',
      day_start: windows.day,
      month_start: windows.month,
      created_at: windows.now,
      updated_at: windows.now,
    })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'agent', 'asset']).doUpdateSet({
        daily_limit: limits.dailyLimit,
        monthly_limit: limits.monthlyLimit,
        ...(limits.perTxLimit !== undefined && { per_tx_limit: limits.perTxLimit }),
        updated_at: windows.now,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateLimits(db: Executor, key: BudgetKey, patch: LimitsPatch, now: Date) {
  return db
    .updateTable('budgets')
    .set({
      ...(patch.dailyLimit !== undefined && { daily_limit: patch.dailyLimit }),
      ...(patch.monthlyLimit !== undefined && { monthly_limit: patch.monthlyLimit }),
      ...(patch.perTxLimit !== undefined && { per_tx_limit: patch.perTxLimit }),
      updated_at: now,
    })
    .where('organization_id', '=', key.organizationId)
    .where('agent', '=', key.agent)
    .where('asset', '=', key.asset)
    .returningAll()
    .executeTakeFirst();
}

export type SpendRow = BudgetRow & { spend_id: string | null; authorization_id: string | null };

export interface Reservation extends BudgetKey {
  amount: string;
  counterparty: string | null;
  day: Date;
  month: Date;
  now: Date;
  audit: AuditMeta;
  /** What the statement announces (events on); null or absent: nothing. */
  events?: SpendEvents | null | undefined;
}

/** What a spend or a hold announces: its own event, and the thresholds of its limits it takes the budget past. */
export interface SpendEvents extends EventMeta {
  /** Percentages (1–100), ascending. */
  thresholds: number[];
}

/**
 * The `budget.threshold` events (`type`, `data`) of `o`, a reservation's outcome (the budget row
 * as updated, with `spend_id` and `authorization_id`): `vouch_budget_thresholds` (packages/db,
 * functions.ts) returns one per threshold of each window above the highest announced in it and up
 * to what spent + held now reach, and records the new highest. It runs only for an accepted
 * reservation that leaves a window at or above the lowest threshold: most reservations cross
 * nothing, and the condition ends those before anything else of it is evaluated.
 */
function thresholdEvents(thresholds: number[]): RawBuilder<unknown> {
  if (thresholds.length === 0) return sql``;
  const lowest = sql.lit(Math.min(...thresholds));
  return sql`UNION ALL SELECT x.type, x.data FROM vouch_budget_thresholds(o.organization_id, o.agent, o.asset,
        ${thresholds}::int[], o.day_start, o.daily_limit, o.daily_spent, o.daily_held,
        o.month_start, o.monthly_limit, o.monthly_spent, o.monthly_held, o.spend_id, o.authorization_id) AS x
      WHERE o.last_refusal IS NULL AND ((o.daily_spent + o.daily_held) * 100 >= ${lowest} * o.daily_limit
        OR (o.monthly_spent + o.monthly_held) * 100 >= ${lowest} * o.monthly_limit)`;
}

/**
 * A spend (`kind: 'spend'`) or a hold (`kind: 'hold'`): one statement that rolls the windows
 * forward and, only if the sanctions screen passes (`screeningRefusalSql`: a list is active, and
 * neither the agent, its owner nor the counterparty is on it) and every limit holds against the
 * row as it is when the row lock is taken
 * (Postgres re-evaluates a concurrently updated row) — with what is held counted as what is
 * spent — debits the budget (a spend) or adds to what it holds (a hold, which also inserts the
 * authorization). A spend writes its ledger row accepted or refused; a refused hold writes a
 * refused ledger row. The statement appends the outcome to the organization's audit log and,
 * with `events`, writes its event (`spend.accepted`/`spend.refused`, `authorization.created`/
 * `authorization.refused`) and the `budget.threshold` events it crosses. `last_refusal` carries
 * the outcome to the inserts. Returns nothing when the organization has no such budget.
 *
 * The reservation's values are columns of `input`, each a parameter once however often the
 * expressions use them, and `input` is materialized: inlined, its sanctions lookup was planned
 * and run once per use of the refusal. The statement is prepared (one text per kind and
 * threshold list): planned once per connection.
 */
export async function reserve(
  db: Executor,
  kind: 'spend' | 'hold',
  v: Reservation & {
    expiresAt?: Date;
    metadata?: Record<string, unknown> | null;
    decisionId?: string | null;
    /** A hold waiting for an approval is reserved like any hold but cannot be captured until approved. */
    holdStatus?: 'held' | 'pending_approval';
  },
): Promise<SpendRow | undefined> {
  const amount = sql`input.amount`;
  // Counters of windows that have passed count as zero; windows only move forward.
  const dayCurrent = sql`b.day_start >= input.day`;
  const monthCurrent = sql`b.month_start >= input.month`;
  const daily = sql`(CASE WHEN ${dayCurrent} THEN b.daily_spent ELSE 0 END)`;
  const monthly = sql`(CASE WHEN ${monthCurrent} THEN b.monthly_spent ELSE 0 END)`;
  const dailyHeld = sql`(CASE WHEN ${dayCurrent} THEN b.daily_held ELSE 0 END)`;
  const monthlyHeld = sql`(CASE WHEN ${monthCurrent} THEN b.monthly_held ELSE 0 END)`;
  const refusal = sql`(CASE
      WHEN input.screening IS NOT NULL THEN input.screening
      WHEN ${amount} > b.per_tx_limit THEN 'PER_TX_LIMIT'
      WHEN ${daily} + ${dailyHeld} + ${amount} > b.daily_limit THEN 'DAILY_LIMIT'
      WHEN ${monthly} + ${monthlyHeld} + ${amount} > b.monthly_limit THEN 'MONTHLY_LIMIT'
    END)`;
  const taken = sql`(CASE WHEN ${refusal} IS NULL THEN ${amount} ELSE 0 END)`;
  const spent = kind === 'spend' ? taken : sql`0`;
  const held = kind === 'hold' ? taken : sql`0`;
  // What happened, over the outcome under the alias `o`: the audit entry's action and the event's type.
  const outcome =
    kind === 'spend'
      ? sql`CASE WHEN o.last_refusal IS NULL THEN 'spend.accepted' ELSE 'spend.refused' END`
      : sql`CASE WHEN o.last_refusal IS NULL THEN 'authorization.created' ELSE 'authorization.refused' END`;
  const events = v.events ?? null;
  // The reservation's own event: what changed, and the budget as it is after it.
  const ownData = sql`jsonb_build_object('amount', input.amount::text, 'asset', o.asset, 'counterparty', input.counterparty,
      'reason', o.last_refusal, 'spendId', o.spend_id, 'authorizationId', o.authorization_id,
      'dailySpent', o.daily_spent::text, 'monthlySpent', o.monthly_spent::text,
      'dailyHeld', o.daily_held::text, 'monthlyHeld', o.monthly_held::text,
      'dailyLimit', o.daily_limit::text, 'monthlyLimit', o.monthly_limit::text, 'perTxLimit', o.per_tx_limit::text,
      'expiresAt', ${kind === 'hold' ? sql`floor(extract(epoch FROM input.expires_at))::bigint` : sql`NULL::bigint`})`;
  const announced = sql`outcome AS o CROSS JOIN input CROSS JOIN LATERAL (
      SELECT ${outcome} AS type, ${ownData} AS data
      ${thresholdEvents(events?.thresholds ?? [])}
    ) AS e`;
  const statement = sql<SpendRow>`
    WITH input AS MATERIALIZED (
      -- Evaluated once: no active sanctions list, the agent or its owner on it, or the
      -- counterparty on it refuses the reservation.
      SELECT ${screeningRefusalSql(v.agent, v.counterparty)} AS screening, ${v.amount}::numeric AS amount,
        ${v.day}::timestamptz AS day, ${v.month}::timestamptz AS month, ${v.counterparty}::text AS counterparty,
        ${v.expiresAt ?? null}::timestamptz AS expires_at
    ), upd AS (
      UPDATE budgets AS b SET
        daily_spent = ${daily} + ${spent},
        monthly_spent = ${monthly} + ${spent},
        daily_held = ${dailyHeld} + ${held},
        monthly_held = ${monthlyHeld} + ${held},
        last_refusal = ${refusal},
        day_start = GREATEST(b.day_start, input.day),
        month_start = GREATEST(b.month_start, input.month),
        updated_at = ${v.now}
      FROM input
      WHERE b.organization_id = ${v.organizationId} AND b.agent = ${v.agent} AND b.asset = ${v.asset}
      RETURNING b.*
    ), auth AS (
      INSERT INTO authorizations (organization_id, agent, asset, amount, counterparty, metadata, status,
        day_start, month_start, expires_at, created_at, updated_at, decision_id, actor_key_id)
      SELECT organization_id, agent, asset, input.amount, input.counterparty, ${v.metadata ? JSON.stringify(v.metadata) : null}::jsonb,
        ${v.holdStatus ?? 'held'}, day_start, month_start, input.expires_at, ${v.now}, ${v.now}, ${v.decisionId ?? null}::text,
        ${v.audit.actorKeyId}
      FROM upd CROSS JOIN input WHERE ${kind === 'hold' ? sql`last_refusal IS NULL` : sql`false`}
      RETURNING id
    ), ledger AS (
      INSERT INTO spends (organization_id, agent, asset, kind, counterparty, actor_key_id, amount, accepted, reason,
        created_at, day_start, month_start)
      SELECT organization_id, agent, asset, ${kind === 'spend' ? 'spend' : 'authorization'}, input.counterparty,
        ${v.audit.actorKeyId}, input.amount, last_refusal IS NULL, last_refusal, ${v.now}, day_start, month_start
      FROM upd CROSS JOIN input WHERE ${kind === 'spend' ? sql`true` : sql`last_refusal IS NOT NULL`}
      RETURNING id
    ), outcome AS (
      SELECT upd.*, ledger.id::text AS spend_id, auth.id::text AS authorization_id
      FROM upd LEFT JOIN ledger ON true LEFT JOIN auth ON true
    ), ${auditCtes(
      v.audit,
      {
        action: outcome,
        target: sql`o.agent`,
        details: sql`jsonb_build_object('amount', input.amount::text, 'asset', o.asset, 'reason', o.last_refusal,
          'spendId', o.spend_id, 'authorizationId', o.authorization_id)`,
      },
      sql`outcome AS o CROSS JOIN input`,
    )}, ${eventCtes(events, 'reservation_events', { type: sql`e.type`, agent: sql`o.agent`, data: sql`e.data` }, announced)}
    SELECT * FROM outcome`;
  const result = await runPrepared(db, statement.compile(db));
  return result.rows[0];
}

/** What releasing a hold needs: which hold, and how much of it is captured (0: void or expiry). */
export interface Release {
  organizationId: string;
  agent: string;
  id: string;
  /** The amount captured; null: the whole hold. */
  capture: string | null;
  status: 'captured' | 'voided';
  /** Also a hold waiting for its approval: only the approval's denial ends one (a public void is 409). */
  allowPending?: boolean | undefined;
  /**
   * The payment has already moved (an x402 settlement): the capture records it whatever the
   * sanctions screen now finds, and answers what it found. Otherwise the screen refuses it.
   */
  settled?: boolean | undefined;
  now: Date;
  audit: AuditMeta;
  /** Its event (`authorization.captured` / `authorization.voided`); null or absent: none. */
  events?: EventMeta | null | undefined;
}

export type ReleaseRow = AuthorizationRow & { spend_id: string | null };

/**
 * What a release did: the hold as released (`row`), or nothing (`row` undefined, the hold found
 * or not); and, for a capture, what the sanctions screen found in the same statement (null: it
 * passes) — why it was refused, or, for a `settled` capture, what it was recorded despite.
 */
export interface Released {
  row: ReleaseRow | undefined;
  /** The hold as the statement saw it before releasing (undefined: no such hold). */
  seen: { status: AuthorizationRow['status']; expiresAt: Date; amount: string } | undefined;
  screening: ScreeningRefusal | null;
}

/**
 * Captures (in part or whole) or voids a hold, in one statement: the hold leaves `held` (only a
 * hold in `held`, or `pending_approval` with `allowPending`, that has not expired, and a capture
 * no larger than it), and the budget gives back what it reserved in each of its windows that the
 * budget still counts, adding what was captured to what is spent there (the budget row's own
 * windows decide, as it is when locked). A capture writes a ledger row in the hold's windows.
 * Nothing happens when the hold is not `held`, the capture is larger than the hold, or the
 * sanctions screen refuses a capture that is not `settled` (`screeningRefusalSql`): a hold is
 * released at most once.
 */
export async function release(db: Executor, v: Release): Promise<Released> {
  const capturing = v.status === 'captured';
  const captured = capturing ? (v.capture === null ? sql`a.amount` : sql`${v.capture}::numeric`) : sql`0`;
  const result = await sql<
    ReleaseRow & {
      screened: unknown;
      redeemed_approval: unknown;
      screening: ScreeningRefusal | null;
      released: boolean;
      seen_status: AuthorizationRow['status'];
      seen_expires_at: Date;
      seen_amount: string;
    }
  >`
    WITH grant_lock AS MATERIALIZED (
      -- A capture spends the approved grant whose hold it is (granted, below). Its row is locked
      -- first, before the hold's: a decision redeeming the grant takes them in that order, as
      -- approving and denying do, so the two wait for each other instead of deadlocking.
      SELECT p.id FROM approvals AS p
      WHERE ${capturing} AND p.organization_id = ${v.organizationId} AND p.status = 'approved'
        AND p.authorization_id = ${v.id}::bigint
      FOR UPDATE
    ), seen AS (
      -- Money moves at the capture: the sanctions screen meets it as it meets a spend (no active
      -- list, or the agent, its owner or the hold's counterparty listed since the hold), and its
      -- answer is this statement's, so the reason given is the one that refused.
      SELECT h.id, h.status, h.expires_at, h.amount::text AS amount, CASE WHEN ${capturing} THEN ${screeningRefusalSql(v.agent, sql.ref('h.counterparty'))} END AS screening,
        (SELECT count(*) FROM grant_lock) AS grants_locked
      FROM authorizations AS h
      WHERE h.id = ${v.id}::bigint AND h.organization_id = ${v.organizationId} AND h.agent = ${v.agent}
    ), a AS (
      UPDATE authorizations AS a SET status = ${v.status}, captured = ${captured}, updated_at = ${v.now},
        captured_at = ${capturing ? v.now : null}::timestamptz, released_at = ${v.now}
      FROM seen
      WHERE a.id = seen.id
        AND (a.status = 'held' OR (${v.status === 'voided' && v.allowPending === true} AND a.status = 'pending_approval'))
        AND a.expires_at > ${v.now} AND ${captured} <= a.amount
        AND (seen.screening IS NULL OR ${v.settled === true})
      RETURNING a.*
    ), upd AS (
      UPDATE budgets AS b SET
        daily_held = b.daily_held - CASE WHEN b.day_start = a.day_start THEN a.amount ELSE 0 END,
        daily_spent = b.daily_spent + CASE WHEN b.day_start = a.day_start THEN a.captured ELSE 0 END,
        monthly_held = b.monthly_held - CASE WHEN b.month_start = a.month_start THEN a.amount ELSE 0 END,
        monthly_spent = b.monthly_spent + CASE WHEN b.month_start = a.month_start THEN a.captured ELSE 0 END,
        updated_at = ${v.now}
      FROM a
      WHERE b.organization_id = a.organization_id AND b.agent = a.agent AND b.asset = a.asset
      RETURNING b.agent
    ), ledger AS (
      INSERT INTO spends (organization_id, agent, asset, kind, counterparty, actor_key_id, amount, accepted, reason,
        created_at, day_start, month_start, authorization_id)
      SELECT a.organization_id, a.agent, a.asset, 'capture', a.counterparty, ${v.audit.actorKeyId}, a.captured, true, NULL,
        ${v.now}, a.day_start, a.month_start, a.id
      FROM a WHERE a.captured > 0
      RETURNING id
    ), granted AS (
      ${
        capturing
          ? sql`-- A hold an approval reserved is that approval's payment: capturing it spends the grant,
      -- so that no decision redeems it for a second payment.
      UPDATE approvals AS p SET status = 'redeemed', redeemed_at = ${v.now}
      FROM a
      WHERE p.organization_id = a.organization_id AND p.status = 'approved' AND p.authorization_id = a.id
      RETURNING p.id::text AS approval_id`
          : sql`SELECT NULL::text AS approval_id WHERE false`
      }
    ), outcome AS (
      -- Reading upd here takes the budget's row lock before the audit head's, as every other
      -- statement does: a data-modifying CTE nobody reads runs at the end, in no set order.
      SELECT a.*, ledger.id::text AS spend_id, seen.screening AS screened, granted.approval_id AS redeemed_approval
      FROM a JOIN seen ON true LEFT JOIN upd ON true LEFT JOIN ledger ON true LEFT JOIN granted ON true
    ), ${auditCtes(
      v.audit,
      {
        action: sql`${`authorization.${v.status}`}::text`,
        target: sql`a.agent`,
        details: sql`jsonb_build_object('authorizationId', a.id::text, 'amount', a.amount::text,
          'captured', a.captured::text, 'spendId', a.spend_id)
          || CASE WHEN a.screened IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('screening', a.screened) END
          || CASE WHEN a.redeemed_approval IS NULL THEN '{}'::jsonb
            ELSE jsonb_build_object('approvalRedeemed', a.redeemed_approval) END`,
      },
      sql`outcome AS a`,
    )}, ${eventCtes(
      v.events ?? null,
      'release_events',
      {
        type: sql`${`authorization.${v.status}`}::text`,
        agent: sql`a.agent`,
        data: sql`jsonb_build_object('authorizationId', a.id::text, 'amount', a.amount::text, 'asset', a.asset,
          'counterparty', a.counterparty, 'captured', a.captured::text, 'spendId', a.spend_id)
          || CASE WHEN a.screened IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('screening', a.screened) END`,
      },
      sql`outcome AS a`,
    )}
    SELECT outcome.*, outcome.id::text AS id, seen.screening, outcome.id IS NOT NULL AS released,
      seen.status AS seen_status, seen.expires_at AS seen_expires_at, seen.amount AS seen_amount
    FROM seen LEFT JOIN outcome ON true`.execute(db);
  const first = result.rows[0];
  if (!first) return { row: undefined, seen: undefined, screening: null };
  const {
    screened: _s,
    redeemed_approval: _r,
    screening,
    released,
    seen_status,
    seen_expires_at,
    seen_amount,
    ...row
  } = first;
  return {
    row: released ? (row as ReleaseRow) : undefined,
    seen: { status: seen_status, expiresAt: seen_expires_at, amount: seen_amount },
    screening,
  };
}

/** The organizations that have holds past their time, for the sweep to expire one organization at a time. */
export async function organizationsWithDueHolds(db: Executor, now: Date): Promise<string[]> {
  const rows = await db
    .selectFrom('authorizations')
    .select('organization_id')
    .distinct()
    .where('status', 'in', LAPSING_HOLD)
    .where('expires_at', '<=', now)
    .execute();
  return rows.map((r) => r.organization_id);
}

/**
 * Expires up to `limit` of the organization's holds whose time has passed (held, or waiting for an
 * approval), gives back what each reserved in the windows its budget still counts, and appends
 * one audit entry listing them, in one statement. A hold is taken by one sweep only
 * (`SKIP LOCKED`) and changes status once, so nothing is released twice; its budgets are locked
 * in key order, so sweeps running at once (several workers) do not deadlock. Returns the expired holds.
 */
export async function expireHolds(
  db: Executor,
  now: Date,
  limit: number,
  audit: AuditMeta,
  events: EventMeta | null = null,
): Promise<AuthorizationRow[]> {
  const result = await sql<AuthorizationRow>`
    WITH due AS (
      SELECT id FROM authorizations
      WHERE organization_id = ${audit.organizationId} AND status IN (${sql.join(LAPSING_HOLD)}) AND expires_at <= ${now}
      ORDER BY expires_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ), a AS (
      UPDATE authorizations AS a SET status = 'expired', updated_at = ${now}, released_at = ${now}
      FROM due WHERE a.id = due.id
      RETURNING a.*
    ), locked AS (
      -- The budgets are locked in one order, their key's: two sweeps whose holds share budgets wait
      -- for one another instead of each locking one the other needs (a deadlock). The plan of an
      -- UPDATE would lock them in an order of its own (a hash of each batch's keys).
      SELECT b.organization_id, b.agent, b.asset FROM budgets b
      WHERE (b.organization_id, b.agent, b.asset) IN (SELECT organization_id, agent, asset FROM a)
      ORDER BY b.organization_id, b.agent, b.asset
      FOR UPDATE
    ), upd AS (
      -- Per budget, each hold gives back in the windows it counts in, judged against the row as locked.
      UPDATE budgets AS b SET
        daily_held = b.daily_held - COALESCE((SELECT sum(x.amount) FROM a x
          WHERE x.organization_id = b.organization_id AND x.agent = b.agent AND x.asset = b.asset
            AND x.day_start = b.day_start), 0),
        monthly_held = b.monthly_held - COALESCE((SELECT sum(x.amount) FROM a x
          WHERE x.organization_id = b.organization_id AND x.agent = b.agent AND x.asset = b.asset
            AND x.month_start = b.month_start), 0),
        updated_at = ${now}
      WHERE (b.organization_id, b.agent, b.asset) IN (SELECT organization_id, agent, asset FROM locked)
      RETURNING b.agent
    ), expired AS (
      -- Counting upd's rows takes the budgets' locks before the audit head's (see release).
      SELECT jsonb_agg(jsonb_build_object('authorizationId', a.id::text, 'agent', a.agent, 'amount', a.amount::text)
        ORDER BY a.id) AS holds, (SELECT count(*) FROM upd) AS budgets
      FROM a HAVING count(*) > 0
    ), ${auditCtes(
      audit,
      {
        action: sql`'authorization.expired'::text`,
        target: sql`NULL::text`,
        details: sql`jsonb_build_object('holds', e.holds)`,
      },
      sql`expired AS e`,
    )}, ${eventCtes(
      events,
      'expiry_events',
      {
        // One event per hold.
        type: sql`'authorization.expired'::text`,
        agent: sql`a.agent`,
        data: sql`jsonb_build_object('authorizationId', a.id::text, 'amount', a.amount::text, 'asset', a.asset,
          'counterparty', a.counterparty, 'expiresAt', floor(extract(epoch FROM a.expires_at))::bigint)`,
      },
      sql`a`,
    )}
    SELECT a.*, a.id::text AS id FROM a ORDER BY a.id`.execute(db);
  return result.rows;
}

function authorizationQuery(db: Executor, organizationId: string, agent: string, id: string) {
  return db
    .selectFrom('authorizations')
    .selectAll()
    .select(sql<string>`id::text`.as('id'))
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .where('id', '=', id);
}

export function findAuthorization(db: Executor, organizationId: string, agent: string, id: string) {
  return authorizationQuery(db, organizationId, agent, id).executeTakeFirst();
}

/** A hold, and what the sanctions screen would find if it were captured now (null: it passes). */
export function findAuthorizationState(db: Executor, organizationId: string, agent: string, id: string) {
  return authorizationQuery(db, organizationId, agent, id)
    .select(screeningRefusalSql(agent, sql.ref('authorizations.counterparty')).as('screening'))
    .executeTakeFirst();
}

export function listAuthorizations(
  db: Executor,
  key: { organizationId: string; agent: string },
  filter: { status?: AuthorizationRow['status'] | undefined; now: Date; beforeId?: string | undefined },
  limit: number,
) {
  let query = db
    .selectFrom('authorizations')
    .selectAll()
    .select(sql<string>`id::text`.as('id'))
    .where('organization_id', '=', key.organizationId)
    .where('agent', '=', key.agent);
  // By the status a hold reads as at `now` (toAuthorization): one past its time is expired, swept or not.
  if (filter.status) query = query.where(statusAtSql(filter.status, LAPSING_HOLD, filter.now));
  if (filter.beforeId) query = query.where('authorizations.id', '<', filter.beforeId);
  return query
    .orderBy('authorizations.id', 'desc')
    .limit(limit + 1)
    .execute();
}

export interface SpendFilter {
  organizationId: string;
  agent: string;
  status?: 'accepted' | 'refused' | undefined;
  asset?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  beforeId?: string | undefined;
}

/** A page of the organization's ledger of the agent, newest first. */
export function listSpends(db: Executor, filter: SpendFilter, limit: number) {
  let query = db
    .selectFrom('spends')
    .selectAll()
    .select([sql<string>`id::text`.as('id'), sql<string | null>`authorization_id::text`.as('authorization_id')])
    .where('organization_id', '=', filter.organizationId)
    .where('agent', '=', filter.agent);
  if (filter.status) query = query.where('accepted', '=', filter.status === 'accepted');
  if (filter.asset !== undefined) query = query.where('asset', '=', filter.asset);
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  if (filter.beforeId) query = query.where('spends.id', '<', filter.beforeId);
  return query
    .orderBy('spends.id', 'desc')
    .limit(limit + 1)
    .execute();
}

export type RefundRow = {
  refund_id: string;
  spend_id: string;
  amount: string;
  refunded: string;
  restored_daily: string;
  restored_monthly: string;
  created_at: Date;
};

/**
 * A refund of an accepted spend, in one statement: the spend's `refunded` grows only while it
 * stays within what was spent (so refunds never exceed it, whatever runs at once), and the budget
 * gives back the amount in each of the spend's windows it still counts, never more than that
 * window shows as spent (`refundRestores` in budgets.model.ts). Without an amount it refunds what
 * is left once it holds the spend's row, after any refund running at once. Returns nothing when
 * the spend is not the organization's accepted spend of the agent or the refund would exceed it.
 */
export async function refund(
  db: Executor,
  v: {
    organizationId: string;
    agent: string;
    spendId: string;
    /** null: all that is left of the spend when the statement locks it. */
    amount: string | null;
    reason: string | null;
    day: Date;
    month: Date;
    now: Date;
    audit: AuditMeta;
    /** Its event (`refund.created`); null or absent: none. */
    events?: EventMeta | null | undefined;
  },
): Promise<RefundRow | undefined> {
  // What the refund gives back to a window: the amount, while the spend's window is the current one.
  const restoresDay = sql`(CASE WHEN s.day_start >= ${v.day} AND b.day_start = s.day_start THEN s.refund_amount ELSE 0 END)`;
  const restoresMonth = sql`(CASE WHEN s.month_start >= ${v.month} AND b.month_start = s.month_start THEN s.refund_amount ELSE 0 END)`;
  const result = await sql<RefundRow>`
    WITH cur AS (
      SELECT id, COALESCE(${v.amount}::numeric, amount - refunded) AS refund_amount FROM spends
      WHERE id = ${v.spendId}::bigint AND organization_id = ${v.organizationId} AND agent = ${v.agent} AND accepted
      FOR UPDATE
    ), s AS (
      UPDATE spends AS s SET refunded = s.refunded + cur.refund_amount
      FROM cur
      WHERE s.id = cur.id AND cur.refund_amount > 0 AND s.refunded + cur.refund_amount <= s.amount
      RETURNING s.*, cur.refund_amount
    ), upd AS (
      UPDATE budgets AS b SET
        daily_spent = b.daily_spent - LEAST(b.daily_spent, ${restoresDay}),
        monthly_spent = b.monthly_spent - LEAST(b.monthly_spent, ${restoresMonth}),
        updated_at = ${v.now}
      FROM s
      WHERE b.organization_id = s.organization_id AND b.agent = s.agent AND b.asset = s.asset
      RETURNING ${restoresDay} AS d, ${restoresMonth} AS m
    ), r AS (
      INSERT INTO refunds (organization_id, agent, spend_id, amount, restored_daily, restored_monthly, reason, actor_key_id, created_at)
      SELECT s.organization_id, s.agent, s.id, s.refund_amount, COALESCE(upd.d, 0), COALESCE(upd.m, 0), ${v.reason},
        ${v.audit.actorKeyId}, ${v.now}
      FROM s LEFT JOIN upd ON true
      RETURNING id, spend_id, amount, restored_daily, restored_monthly, created_at
    ), outcome AS (
      SELECT r.id::text AS refund_id, r.spend_id::text AS spend_id, r.amount::text AS amount, s.refunded::text AS refunded,
        r.restored_daily::text AS restored_daily, r.restored_monthly::text AS restored_monthly, r.created_at, s.agent
      FROM r CROSS JOIN s
    ), ${auditCtes(
      v.audit,
      {
        action: sql`'refund.created'::text`,
        target: sql`o.agent`,
        details: sql`jsonb_build_object('refundId', o.refund_id, 'spendId', o.spend_id, 'amount', o.amount,
          'restoredDaily', o.restored_daily, 'restoredMonthly', o.restored_monthly)`,
      },
      sql`outcome AS o`,
    )}, ${eventCtes(
      v.events ?? null,
      'refund_events',
      {
        type: sql`'refund.created'::text`,
        agent: sql`o.agent`,
        data: sql`jsonb_build_object('refundId', o.refund_id, 'spendId', o.spend_id, 'amount', o.amount,
          'refunded', o.refunded, 'restoredDaily', o.restored_daily, 'restoredMonthly', o.restored_monthly)`,
      },
      sql`outcome AS o`,
    )}
    SELECT * FROM outcome`.execute(db);
  return result.rows[0];
}

export function findSpend(db: Executor, organizationId: string, agent: string, id: string) {
  return db
    .selectFrom('spends')
    .selectAll()
    .select(sql<string>`id::text`.as('id'))
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .where('id', '=', id)
    .executeTakeFirst();
}
