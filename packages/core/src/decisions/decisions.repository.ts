import { type ApprovalRow, type DB, type DecisionRow, type Kysely, runPrepared, sql } from '@vouch/db';

import { LAPSING_HOLD } from '../budgets/budgets.repository.ts';
import { statusAtSql } from '../shared/lapse.ts';

type Executor = Kysely<DB>;

/** The statuses of an approval that end at its `expiresAt`: a pending review, an unredeemed grant. */
export const LAPSING_APPROVAL = ['pending', 'approved'] as const;

export interface NewDecision {
  id: string;
  organizationId: string;
  agent: string;
  amount: string;
  asset: string;
  counterparty: string | null;
  category: string | null;
  context: Record<string, unknown> | null;
  decision: 'allow' | 'deny' | 'review';
  reasons: unknown;
  facts: unknown;
  authorizationId: string | null;
  approvalId: string | null;
  actorKeyId: string | null;
  requestId: string | null;
  now: Date;
}

function decisionValues(d: NewDecision) {
  return {
    id: d.id,
    organization_id: d.organizationId,
    agent: d.agent,
    amount: d.amount,
    asset: d.asset,
    counterparty: d.counterparty,
    category: d.category,
    context: d.context,
    decision: d.decision,
    reasons: d.reasons,
    facts: d.facts,
    authorization_id: d.authorizationId,
    approval_id: d.approvalId,
    actor_key_id: d.actorKeyId,
    request_id: d.requestId,
    created_at: d.now.toISOString(),
  };
}

/**
 * Stores decisions, many in one statement of a fixed text: the rows travel as one JSON document
 * (one parameter, serialised natively and parsed once by PostgreSQL, where arrays of columns cost
 * an escaped array literal per column), and the statement is prepared once per connection however
 * many rows it carries.
 */
export async function insertDecisions(db: Executor, decisions: readonly NewDecision[]): Promise<void> {
  if (decisions.length === 0) return;
  const rows = JSON.stringify(decisions.map(decisionValues));
  const statement = sql`
    INSERT INTO decisions (id, organization_id, agent, amount, asset, counterparty, category, context, decision,
      reasons, facts, authorization_id, approval_id, actor_key_id, request_id, created_at)
    SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS r(id text, organization_id text, agent text, amount numeric,
      asset text, counterparty text, category text, context jsonb, decision text, reasons jsonb, facts jsonb,
      authorization_id bigint, approval_id bigint, actor_key_id text, request_id text, created_at timestamptz)`;
  await runPrepared(db, statement.compile(db));
}

export interface DecisionFilter {
  organizationId: string;
  agent: string;
  decision?: 'allow' | 'deny' | 'review' | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  /** The last decision of the previous page: this page starts after it. */
  after?: { createdAt: Date; id: string } | undefined;
}

/**
 * An agent's decisions in an organization, newest first (by time, then id), `limit + 1` of them.
 * The index on (organization, agent, time) bounds the scan; a page after another starts at its time.
 */
export function listDecisions(db: Executor, filter: DecisionFilter, limit: number): Promise<DecisionRow[]> {
  let query = db
    .selectFrom('decisions')
    .selectAll()
    .select([
      sql<string | null>`authorization_id::text`.as('authorization_id'),
      sql<string | null>`approval_id::text`.as('approval_id'),
    ])
    .where('organization_id', '=', filter.organizationId)
    .where('agent', '=', filter.agent);
  if (filter.decision) query = query.where('decision', '=', filter.decision);
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  const after = filter.after;
  if (after)
    query = query
      .where('created_at', '<=', after.createdAt)
      .where(sql<boolean>`(created_at, id) < (${after.createdAt}, ${after.id})`);
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

/** Whether the organization decided about the agent at least once. */
export async function anyDecision(db: Executor, organizationId: string, agent: string): Promise<boolean> {
  const row = await db
    .selectFrom('decisions')
    .select(sql<number>`1`.as('one'))
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Links a decision to the hold or approval it created (made after the decision's row, in its transaction). */
export async function linkDecision(
  db: Executor,
  id: string,
  links: { authorizationId?: string | null; approvalId?: string | null },
): Promise<void> {
  await db
    .updateTable('decisions')
    .set({
      ...(links.authorizationId !== undefined && { authorization_id: links.authorizationId }),
      ...(links.approvalId !== undefined && { approval_id: links.approvalId }),
    })
    .where('id', '=', id)
    .execute();
}

export async function linkAuthorizationToDecision(db: Executor, authorizationId: string, decisionId: string) {
  await db.updateTable('authorizations').set({ decision_id: decisionId }).where('id', '=', authorizationId).execute();
}

export function findDecision(db: Executor, organizationId: string, id: string): Promise<DecisionRow | undefined> {
  return db
    .selectFrom('decisions')
    .selectAll()
    .select([
      sql<string>`id::text`.as('id'),
      sql<string | null>`authorization_id::text`.as('authorization_id'),
      sql<string | null>`approval_id::text`.as('approval_id'),
    ])
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * A hold that still holds: held or waiting for its approval, and not past its time. One past it
 * is expired although the sweep may not have marked it yet, and can no longer be captured.
 */
const openHold = (now: Date) => sql`status IN (${sql.join(LAPSING_HOLD)}) AND expires_at > ${now}`;

/**
 * Accepted spends and holds the agent made in this organization since `since` that are payments
 * made or under way (held, waiting for approval, captured: not voided or expired), but the hold
 * `exceptHold` (the payment's own, reserved for the approval it redeems). A capture is counted
 * once, as its hold.
 */
export async function velocity(
  db: Executor,
  organizationId: string,
  agent: string,
  since: Date,
  now: Date,
  exceptHold: string | null = null,
): Promise<number> {
  const result = await sql<{ n: number }>`
    SELECT
      (SELECT count(*) FROM spends WHERE organization_id = ${organizationId} AND agent = ${agent}
         AND kind = 'spend' AND accepted AND created_at >= ${since})::int
      + (SELECT count(*) FROM authorizations WHERE organization_id = ${organizationId} AND agent = ${agent}
         AND (status = 'captured' OR (${openHold(now)}))
         AND created_at >= ${since} AND id IS DISTINCT FROM ${exceptHold}::bigint)::int AS n`.execute(db);
  return result.rows[0]?.n ?? 0;
}

/**
 * What the agent spent (spends and captures) and holds (open holds) to a counterparty in this
 * organization since `since`, in one asset: amounts of different assets are in different units.
 * The hold `exceptHold` (the payment's own, reserved for the approval it redeems) is not counted.
 */
export async function toCounterparty(
  db: Executor,
  organizationId: string,
  agent: string,
  asset: string,
  counterparty: string,
  since: Date,
  now: Date,
  exceptHold: string | null = null,
): Promise<bigint> {
  const result = await sql<{ total: string }>`
    SELECT (
      COALESCE((SELECT sum(amount - refunded) FROM spends WHERE organization_id = ${organizationId} AND agent = ${agent}
        AND asset = ${asset} AND counterparty = ${counterparty} AND accepted AND created_at >= ${since}), 0)
      + COALESCE((SELECT sum(amount) FROM authorizations WHERE organization_id = ${organizationId} AND agent = ${agent}
        AND asset = ${asset} AND counterparty = ${counterparty} AND ${openHold(now)}
        AND created_at >= ${since} AND id IS DISTINCT FROM ${exceptHold}::bigint), 0)
    )::text AS total`.execute(db);
  return BigInt(result.rows[0]?.total ?? '0');
}

/**
 * Until the transaction ends, no other decision that holds money for this agent in this
 * organization runs: each reads the policy, and counts the holds, of those before it.
 */
export async function lockPaymentCount(db: Executor, organizationId: string, agent: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${organizationId}), hashtext(${`payments:${agent}`}))`.execute(db);
}

// ── Approvals ───────────────────────────────────────────────────────────────────────────────

const approvalColumns = [
  sql<string>`id::text`.as('id'),
  sql<string>`decision_id::text`.as('decision_id'),
  sql<string | null>`authorization_id::text`.as('authorization_id'),
] as const;

export async function insertApproval(
  db: Executor,
  a: {
    organizationId: string;
    agent: string;
    decisionId: string;
    amount: string;
    asset: string;
    counterparty: string | null;
    category: string | null;
    authorizationId: string | null;
    requestedByKeyId: string | null;
    expiresAt: Date;
    now: Date;
  },
): Promise<ApprovalRow> {
  return db
    .insertInto('approvals')
    .values({
      organization_id: a.organizationId,
      agent: a.agent,
      decision_id: a.decisionId,
      amount: a.amount,
      asset: a.asset,
      counterparty: a.counterparty,
      category: a.category,
      status: 'pending',
      authorization_id: a.authorizationId,
      requested_by_key_id: a.requestedByKeyId,
      expires_at: a.expiresAt,
      created_at: a.now,
    })
    .returningAll()
    .returning(approvalColumns)
    .executeTakeFirstOrThrow();
}

export function findApproval(db: Executor, organizationId: string, id: string): Promise<ApprovalRow | undefined> {
  return db
    .selectFrom('approvals')
    .selectAll()
    .select(approvalColumns)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function listApprovals(
  db: Executor,
  organizationId: string,
  filter: {
    status?: ApprovalRow['status'] | undefined;
    agent?: string | undefined;
    now: Date;
    beforeId?: string | undefined;
  },
  limit: number,
) {
  let query = db
    .selectFrom('approvals')
    .selectAll()
    .select(approvalColumns)
    .where('organization_id', '=', organizationId);
  // By the status an approval reads as at `now` (toApproval): one past its time is expired, swept or not.
  if (filter.status) query = query.where(statusAtSql(filter.status, LAPSING_APPROVAL, filter.now));
  if (filter.agent) query = query.where('agent', '=', filter.agent);
  if (filter.beforeId) query = query.where('approvals.id', '<', filter.beforeId);
  return query
    .orderBy('approvals.id', 'desc')
    .limit(limit + 1)
    .execute();
}

/**
 * Decides a pending approval, once: approved (with the time until which it may be redeemed) or
 * denied. Nothing when it is not pending or has expired.
 */
export function decideApproval(
  db: Executor,
  v: {
    organizationId: string;
    id: string;
    status: 'approved' | 'denied';
    keyId: string | null;
    note: string | null;
    now: Date;
    grantExpiresAt: Date | null;
  },
): Promise<ApprovalRow | undefined> {
  return db
    .updateTable('approvals')
    .set({
      status: v.status,
      decided_by_key_id: v.keyId,
      note: v.note,
      decided_at: v.now,
      ...(v.grantExpiresAt && { expires_at: v.grantExpiresAt }),
    })
    .where('organization_id', '=', v.organizationId)
    .where('id', '=', v.id)
    .where('status', '=', 'pending')
    .where('expires_at', '>', v.now)
    .returningAll()
    .returning(approvalColumns)
    .executeTakeFirst();
}

/** An approved hold becomes capturable until the grant expires. */
export async function approveHold(db: Executor, authorizationId: string, expiresAt: Date, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('authorizations')
    .set({ status: 'held', expires_at: expiresAt, updated_at: now })
    .where('id', '=', authorizationId)
    .where('status', '=', 'pending_approval')
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** A payment as a grant is asked for it: the approval's id and exactly what it is to pay. */
export interface GrantRequest {
  organizationId: string;
  id: string;
  agent: string;
  amount: string;
  asset: string;
  counterparty: string | null;
  category: string | null;
  now: Date;
}

/** SQL condition on the approvals aliased `alias`: `g.id` is approved, unexpired and for exactly this payment. */
function grants(alias: string, g: GrantRequest) {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<boolean>`${column('organization_id')} = ${g.organizationId} AND ${column('id')} = ${g.id}::bigint
    AND ${column('status')} = 'approved' AND ${column('expires_at')} > ${g.now}
    AND ${column('agent')} = ${g.agent} AND ${column('amount')} = ${g.amount}::numeric AND ${column('asset')} = ${g.asset}
    AND ${column('counterparty')} IS NOT DISTINCT FROM ${g.counterparty}
    AND ${column('category')} IS NOT DISTINCT FROM ${g.category}`;
}

/**
 * Redeems an approved grant, once, for exactly what it was granted for: agent, counterparty,
 * amount, asset and category. Nothing when it is not approved, has expired, or is for something else.
 */
export function redeemApproval(db: Executor, g: GrantRequest): Promise<ApprovalRow | undefined> {
  return db
    .updateTable('approvals')
    .set({ status: 'redeemed', redeemed_at: g.now })
    .where(grants('approvals', g))
    .returningAll()
    .returning(approvalColumns)
    .executeTakeFirst();
}

/**
 * The hold reserved for a grant this payment can redeem (approved, unexpired, for exactly this
 * agent, counterparty, amount, asset and category), while it is held and unexpired; nothing otherwise.
 */
export function grantHold(
  db: Executor,
  g: GrantRequest,
): Promise<{ id: string; amount: string; day_start: Date; month_start: Date } | undefined> {
  return db
    .selectFrom('approvals as p')
    .innerJoin('authorizations as a', 'a.id', 'p.authorization_id')
    .select([sql<string>`a.id::text`.as('id'), 'a.amount', 'a.day_start', 'a.month_start'])
    .where(grants('p', g))
    .where('a.status', '=', 'held')
    .where('a.expires_at', '>', g.now)
    .executeTakeFirst();
}

/**
 * The hold `id` if it is held and unexpired, locked until the transaction ends (a void or capture
 * of it waits for the payment that takes it over); null otherwise. A decision redeeming a grant
 * takes the approval's row first and then this one, as approving and denying do.
 */
export async function liveHold(db: Executor, organizationId: string, id: string, now: Date): Promise<string | null> {
  const row = await db
    .selectFrom('authorizations')
    .select(sql<string>`id::text`.as('id'))
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'held')
    .where('expires_at', '>', now)
    .forUpdate()
    .executeTakeFirst();
  return row?.id ?? null;
}

/** Gives a grant back, before its redemption commits (the payment it was redeemed for was refused after all). */
export async function unredeemApproval(db: Executor, organizationId: string, id: string): Promise<void> {
  await db
    .updateTable('approvals')
    .set({ status: 'approved', redeemed_at: null })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'redeemed')
    .where('redeemed_decision_id', 'is', null)
    .execute();
}

export async function setRedeemedDecision(
  db: Executor,
  organizationId: string,
  approvalId: string,
  decisionId: string,
) {
  await db
    .updateTable('approvals')
    .set({ redeemed_decision_id: decisionId })
    .where('organization_id', '=', organizationId)
    .where('id', '=', approvalId)
    .execute();
}

/** The organizations that have pending approvals or unredeemed grants past their time. */
export async function organizationsWithDueApprovals(db: Executor, now: Date): Promise<string[]> {
  const rows = await db
    .selectFrom('approvals')
    .select('organization_id')
    .distinct()
    .where('status', 'in', LAPSING_APPROVAL)
    .where('expires_at', '<=', now)
    .execute();
  return rows.map((r) => r.organization_id);
}

/**
 * Up to `limit` of the organization's pending approvals and unredeemed grants past their time,
 * expired once: a row is taken by one sweep only (`SKIP LOCKED`; one being approved, denied or
 * redeemed meanwhile is left to that change or to the next sweep). Their holds expire with the
 * holds' sweep.
 */
export function expireApprovals(
  db: Executor,
  now: Date,
  organizationId: string,
  limit: number,
): Promise<ApprovalRow[]> {
  return db
    .updateTable('approvals')
    .set({ status: 'expired' })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('approvals')
        .select('id')
        .where('organization_id', '=', organizationId)
        .where('status', 'in', LAPSING_APPROVAL)
        .where('expires_at', '<=', now)
        .orderBy('id')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .where('status', 'in', LAPSING_APPROVAL)
    .returningAll()
    .returning(approvalColumns)
    .execute();
}
