import { type BudgetRow, type DB, type Kysely, type RawBuilder, sql } from '@vouch/db';
import { type AuditMeta, auditCtes } from '../audit/audit.repository.ts';

type Executor = Kysely<DB>;

export type BudgetWithStanding = BudgetRow & { sanctioned: boolean };

/** SQL condition: the agent (an address, or a column holding it) or its owner is on the active sanctions list. */
const agentOrOwnerSanctioned = (agent: string | RawBuilder<unknown>) => sql<boolean>`EXISTS (
  SELECT 1 FROM agents a
  JOIN sanctions_snapshots ss ON ss.is_active
  JOIN sanctions_entries se ON se.snapshot_id = ss.id AND se.address IN (a.address, a.owner)
  WHERE a.address = ${agent})`;

/** The organization's budget of the agent, and whether the agent or its owner is sanctioned (which refuses every spend). */
export function findBudget(
  db: Executor,
  organizationId: string,
  agent: string,
): Promise<BudgetWithStanding | undefined> {
  return db
    .selectFrom('budgets')
    .selectAll()
    .select(agentOrOwnerSanctioned(sql.ref('budgets.agent')).as('sanctioned'))
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .executeTakeFirst();
}

/**
 * Every organization's budget of the agent and the agent's standing, in one read: what the read
 * cache keeps per agent, so that a change of the agent (its owner, the sanctions list) drops
 * them all at once.
 */
export async function findAgentBudgets(
  db: Executor,
  agent: string,
): Promise<{ sanctioned: boolean; rows: BudgetRow[] }> {
  const result = await sql<BudgetRow & { sanctioned: boolean }>`
    SELECT b.*, s.sanctioned FROM (SELECT ${agentOrOwnerSanctioned(agent)} AS sanctioned) AS s
    LEFT JOIN budgets b ON b.agent = ${agent}`.execute(db);
  const first = result.rows[0];
  return {
    sanctioned: first?.sanctioned ?? false,
    rows: result.rows.filter((r) => r.organization_id !== null).map(({ sanctioned: _s, ...row }) => row as BudgetRow),
  };
}

export interface LimitsPatch {
  dailyLimit?: string | undefined;
  monthlyLimit?: string | undefined;
  perTxLimit?: string | undefined;
}

/** First set: all three limits; a concurrent first set of the same agent updates instead. */
export function insertBudget(
  db: Executor,
  organizationId: string,
  agent: string,
  limits: { dailyLimit: string; monthlyLimit: string; perTxLimit: string },
  windows: { day: Date; month: Date; now: Date },
): Promise<BudgetRow> {
  return db
    .insertInto('budgets')
    .values({
      organization_id: organizationId,
      agent,
      daily_limit: limits.dailyLimit,
      monthly_limit: limits.monthlyLimit,
      per_tx_limit: limits.perTxLimit,
      daily_spent: '0',
      monthly_spent: '0',
      day_start: windows.day,
      month_start: windows.month,
      created_at: windows.now,
      updated_at: windows.now,
    })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'agent']).doUpdateSet({
        daily_limit: limits.dailyLimit,
        monthly_limit: limits.monthlyLimit,
        per_tx_limit: limits.perTxLimit,
        updated_at: windows.now,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateLimits(db: Executor, organizationId: string, agent: string, patch: LimitsPatch, now: Date) {
  return db
    .updateTable('budgets')
    .set({
      ...(patch.dailyLimit !== undefined && { daily_limit: patch.dailyLimit }),
      ...(patch.monthlyLimit !== undefined && { monthly_limit: patch.monthlyLimit }),
      ...(patch.perTxLimit !== undefined && { per_tx_limit: patch.perTxLimit }),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .returningAll()
    .executeTakeFirst();
}

export type SpendRow = BudgetRow & { spend_id: string };

/**
 * The spend: one statement that rolls the windows forward, debits only if every
 * limit holds against the row as it is when the row lock is taken (Postgres
 * re-evaluates a concurrently updated row), writes the ledger entry, accepted
 * or refused, and appends it to the organization's audit log. `last_refusal` carries
 * this attempt's outcome to the ledger insert. Returns nothing when the organization
 * has no budget for the agent.
 */
export async function spend(
  db: Executor,
  v: { agent: string; amount: string; day: Date; month: Date; now: Date; audit: AuditMeta },
): Promise<SpendRow | undefined> {
  const org = v.audit.organizationId;
  const amount = sql`${v.amount}::numeric`;
  // Counters of windows that have passed count as zero; windows only move forward.
  const daily = sql`(CASE WHEN b.day_start >= ${v.day} THEN b.daily_spent ELSE 0 END)`;
  const monthly = sql`(CASE WHEN b.month_start >= ${v.month} THEN b.monthly_spent ELSE 0 END)`;
  const refusal = sql`(CASE
      WHEN standing.sanctioned THEN 'SANCTIONED'
      WHEN ${amount} > b.per_tx_limit THEN 'PER_TX_LIMIT'
      WHEN ${daily} + ${amount} > b.daily_limit THEN 'DAILY_LIMIT'
      WHEN ${monthly} + ${amount} > b.monthly_limit THEN 'MONTHLY_LIMIT'
    END)`;
  const debit = sql`(CASE WHEN ${refusal} IS NULL THEN ${amount} ELSE 0 END)`;
  const result = await sql<SpendRow>`
    WITH standing AS (
      -- Evaluated once: the agent or its owner on the active sanctions list refuses the spend.
      SELECT ${agentOrOwnerSanctioned(v.agent)} AS sanctioned
    ), upd AS (
      UPDATE budgets AS b SET
        daily_spent = ${daily} + ${debit},
        monthly_spent = ${monthly} + ${debit},
        last_refusal = ${refusal},
        day_start = GREATEST(b.day_start, ${v.day}),
        month_start = GREATEST(b.month_start, ${v.month}),
        updated_at = ${v.now}
      FROM standing
      WHERE b.organization_id = ${org} AND b.agent = ${v.agent}
      RETURNING b.*
    ), ledger AS (
      INSERT INTO spends (organization_id, agent, actor_key_id, amount, accepted, reason, created_at)
      SELECT organization_id, agent, ${v.audit.actorKeyId}, ${amount}, last_refusal IS NULL, last_refusal, ${v.now} FROM upd
      RETURNING id
    ), ${auditCtes(
      v.audit,
      {
        action: sql`CASE WHEN upd.last_refusal IS NULL THEN 'spend.accepted' ELSE 'spend.refused' END`,
        target: sql`upd.agent`,
        details: sql`jsonb_build_object('spendId', ledger.id::text, 'amount', ${v.amount}::text, 'reason', upd.last_refusal)`,
      },
      sql`upd CROSS JOIN ledger`,
    )}
    SELECT upd.*, ledger.id::text AS spend_id FROM upd CROSS JOIN ledger`.execute(db);
  return result.rows[0];
}
