import { type Kysely, sql } from 'kysely';
import { policiesCacheNotifyV1 } from '../functions.ts';

/**
 * Two-phase spending and the decision at the moment of payment:
 * - budgets per asset (`asset`, '' for the default unit) with `daily_held`/`monthly_held`: what
 *   holds reserve in the current windows, counted against every limit with what was spent;
 * - `authorizations`: holds that are captured (in part or whole), voided or expire;
 * - the spend ledger records the windows each row counts in, captures and refused holds, and
 *   what was refunded (`refunds`);
 * - `policies` (versioned rule sets per agent, and an organization's default), `decisions` (every
 *   answer with its inputs and what decided it) and `approvals` (a human in the loop).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // Budgets: one per organization, agent and asset; holds counted per window.
  await sql`ALTER TABLE budgets ADD COLUMN asset text NOT NULL DEFAULT ''`.execute(db);
  await sql`ALTER TABLE budgets ADD COLUMN daily_held uint256 NOT NULL DEFAULT 0`.execute(db);
  await sql`ALTER TABLE budgets ADD COLUMN monthly_held uint256 NOT NULL DEFAULT 0`.execute(db);
  await sql`ALTER TABLE budgets DROP CONSTRAINT budgets_pkey`.execute(db);
  await sql`ALTER TABLE budgets ADD PRIMARY KEY (organization_id, agent, asset)`.execute(db);

  await db.schema
    .createTable('authorizations')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('captured', sql`uint256`, (c) => c.notNull().defaultTo(0))
    .addColumn('counterparty', 'text')
    .addColumn('metadata', 'jsonb')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status IN ('pending_approval', 'held', 'captured', 'voided', 'expired')`),
    )
    .addColumn('day_start', 'timestamptz', (c) => c.notNull())
    .addColumn('month_start', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('captured_at', 'timestamptz')
    .addColumn('released_at', 'timestamptz')
    .addColumn('decision_id', 'text')
    .addColumn('actor_key_id', 'text')
    .addForeignKeyConstraint('authorizations_budget_fkey', ['organization_id', 'agent', 'asset'], 'budgets', [
      'organization_id',
      'agent',
      'asset',
    ])
    .addCheckConstraint('authorizations_captured_check', sql`captured <= amount`)
    .execute();
  await sql`CREATE INDEX authorizations_agent_idx ON authorizations (organization_id, agent, id)`.execute(db);
  await sql`CREATE INDEX authorizations_open_idx ON authorizations (expires_at)
    WHERE status IN ('held', 'pending_approval')`.execute(db);

  // The ledger: which kind of row, the windows it counts in, the hold it captured, what was refunded.
  await sql`ALTER TABLE spends ADD COLUMN kind text NOT NULL DEFAULT 'spend'
    CHECK (kind IN ('spend', 'capture', 'authorization'))`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN asset text NOT NULL DEFAULT ''`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN authorization_id bigint REFERENCES authorizations (id)`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN refunded uint256 NOT NULL DEFAULT 0`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN counterparty text`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN day_start timestamptz`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN month_start timestamptz`.execute(db);
  await sql`UPDATE spends SET
      day_start = date_trunc('day', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
      month_start = date_trunc('month', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`.execute(db);
  await sql`ALTER TABLE spends ALTER COLUMN day_start SET NOT NULL, ALTER COLUMN month_start SET NOT NULL`.execute(db);
  await sql`ALTER TABLE spends ADD CONSTRAINT spends_refunded_check CHECK (refunded <= amount)`.execute(db);
  // Refunds and per-counterparty caps read captures by counterparty and time.
  await sql`CREATE INDEX spends_counterparty_idx ON spends (organization_id, agent, counterparty, created_at)
    WHERE accepted AND counterparty IS NOT NULL`.execute(db);

  await db.schema
    .createTable('refunds')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('spend_id', 'bigint', (c) => c.notNull().references('spends.id'))
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('restored_daily', sql`uint256`, (c) => c.notNull())
    .addColumn('restored_monthly', sql`uint256`, (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('actor_key_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX refunds_spend_idx ON refunds (spend_id)`.execute(db);

  // Policies: an organization's rule set for one agent, or its default ('' as the agent); every
  // change is a new version, a deletion a version without rules.
  await db.schema
    .createTable('policies')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('rules', 'jsonb')
    .addColumn('actor_key_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    // What the read cache keys a policy by; its notifications name it.
    .addColumn('cache_key', 'text', (c) => c.generatedAlwaysAs(sql`organization_id || '/' || agent`).stored())
    .addPrimaryKeyConstraint('policies_pkey', ['organization_id', 'agent', 'version'])
    .execute();
  await policiesCacheNotifyV1.create(db);

  await db.schema
    .createTable('decisions')
    // Made by the API (a random UUID), so that decisions can be stored many per statement.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('counterparty', 'text')
    .addColumn('category', 'text')
    .addColumn('context', 'jsonb')
    .addColumn('decision', 'text', (c) => c.notNull().check(sql`decision IN ('allow', 'deny', 'review')`))
    .addColumn('reasons', 'jsonb', (c) => c.notNull())
    .addColumn('facts', 'jsonb', (c) => c.notNull())
    .addColumn('authorization_id', 'bigint')
    .addColumn('approval_id', 'bigint')
    .addColumn('actor_key_id', 'text')
    .addColumn('request_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX decisions_agent_idx ON decisions (organization_id, agent, created_at)`.execute(db);

  await db.schema
    .createTable('approvals')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('decision_id', 'text', (c) => c.notNull().references('decisions.id'))
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('counterparty', 'text')
    .addColumn('category', 'text')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status IN ('pending', 'approved', 'denied', 'expired', 'redeemed')`),
    )
    .addColumn('authorization_id', 'bigint', (c) => c.references('authorizations.id'))
    .addColumn('requested_by_key_id', 'text')
    .addColumn('decided_by_key_id', 'text')
    .addColumn('note', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('decided_at', 'timestamptz')
    .addColumn('redeemed_at', 'timestamptz')
    .addColumn('redeemed_decision_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX approvals_status_idx ON approvals (organization_id, status, id)`.execute(db);
  await sql`CREATE INDEX approvals_open_idx ON approvals (expires_at) WHERE status IN ('pending', 'approved')`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('approvals').ifExists().execute();
  await db.schema.dropTable('decisions').ifExists().execute();
  await policiesCacheNotifyV1.drop(db);
  await db.schema.dropTable('policies').ifExists().execute();
  await db.schema.dropTable('refunds').ifExists().execute();
  await sql`DROP INDEX IF EXISTS spends_counterparty_idx`.execute(db);
  await sql`ALTER TABLE spends DROP CONSTRAINT IF EXISTS spends_refunded_check`.execute(db);
  // Captures and refused holds of the default unit stay in the ledger as spends; other units go.
  await sql`DELETE FROM spends WHERE asset <> ''`.execute(db);
  await sql`ALTER TABLE spends DROP COLUMN month_start, DROP COLUMN day_start, DROP COLUMN counterparty,
    DROP COLUMN refunded, DROP COLUMN authorization_id, DROP COLUMN asset, DROP COLUMN kind`.execute(db);
  await db.schema.dropTable('authorizations').ifExists().execute();
  // Going back to one budget per organization and agent keeps the default unit's.
  await sql`DELETE FROM budgets WHERE asset <> ''`.execute(db);
  await sql`ALTER TABLE budgets DROP CONSTRAINT budgets_pkey`.execute(db);
  await sql`ALTER TABLE budgets DROP COLUMN monthly_held, DROP COLUMN daily_held, DROP COLUMN asset`.execute(db);
  await sql`ALTER TABLE budgets ADD PRIMARY KEY (organization_id, agent)`.execute(db);
}
