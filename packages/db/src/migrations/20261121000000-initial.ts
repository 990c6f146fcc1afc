import { type Kysely, sql } from 'kysely';

// Every amount column uses this domain: exact integers that fit an EVM uint256.
const UINT256_MAX = '115792089237316195423570985008687907853269984665640564039457584007913129639935';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE DOMAIN uint256 AS numeric(78,0) CHECK (VALUE >= 0 AND VALUE <= ${sql.raw(UINT256_MAX)})`.execute(db);

  await db.schema
    .createTable('agents')
    .addColumn('address', 'text', (c) => c.primaryKey().check(sql`address ~ '^0x[0-9a-f]{40}$'`))
    .addColumn('is_registered', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('owner', 'text')
    .addColumn('owner_changed_at', 'timestamptz')
    .addColumn('metadata', 'jsonb')
    .addColumn('score', 'integer', (c) => c.notNull().defaultTo(0).check(sql`score BETWEEN 0 AND 1000`))
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('registered_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_score_idx').on('agents').columns(['score', 'address']).execute();
  await db.schema.createIndex('agents_updated_idx').on('agents').columns(['updated_at', 'address']).execute();

  await db.schema
    .createTable('score_events')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('agent', 'text', (c) => c.notNull().references('agents.address'))
    .addColumn('old_score', 'integer', (c) => c.notNull())
    .addColumn('new_score', 'integer', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull().check(sql`source IN ('manual', 'batch', 'model')`))
    .addColumn('reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('score_events_agent_idx').on('score_events').columns(['agent', 'created_at']).execute();

  await db.schema
    .createTable('budgets')
    .addColumn('agent', 'text', (c) => c.primaryKey().references('agents.address'))
    .addColumn('daily_limit', sql`uint256`, (c) => c.notNull())
    .addColumn('monthly_limit', sql`uint256`, (c) => c.notNull())
    .addColumn('per_tx_limit', sql`uint256`, (c) => c.notNull())
    .addColumn('daily_spent', sql`uint256`, (c) => c.notNull().defaultTo(0))
    .addColumn('monthly_spent', sql`uint256`, (c) => c.notNull().defaultTo(0))
    .addColumn('day_start', 'timestamptz', (c) => c.notNull())
    .addColumn('month_start', 'timestamptz', (c) => c.notNull())
    .addColumn('last_refusal', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('spends')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('agent', 'text', (c) => c.notNull().references('agents.address'))
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('accepted', 'boolean', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('spends_agent_idx').on('spends').columns(['agent', 'created_at']).execute();

  await db.schema
    .createTable('transactions')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('agent', 'text', (c) => c.notNull().references('agents.address'))
    .addColumn('tx_hash', 'text', (c) => c.notNull())
    .addColumn('amount', sql`uint256`, (c) => c.notNull())
    .addColumn('type', 'smallint', (c) => c.notNull().check(sql`type BETWEEN 0 AND 5`))
    .addColumn('success', 'boolean', (c) => c.notNull())
    .addColumn('counterparty', 'text')
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('transactions_agent_tx_hash_key', ['agent', 'tx_hash'])
    .execute();
  await db.schema
    .createIndex('transactions_agent_time_idx')
    .on('transactions')
    .columns(['agent', 'occurred_at'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer', (c) => c.notNull())
    .addColumn('response', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry_idx').on('idempotency_keys').column('expires_at').execute();

  await db.schema
    .createTable('verifications')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('passed', 'integer', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('score', 'integer', (c) => c.notNull())
    .addColumn('grade', 'text', (c) => c.notNull())
    .addColumn('checks', 'jsonb', (c) => c.notNull())
    .addColumn('check_details', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('verifications_agent_idx').on('verifications').columns(['agent', 'created_at']).execute();

  await db.schema
    .createTable('sanctions_snapshots')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('snapshot_date', 'text', (c) => c.notNull())
    .addColumn('entries', 'integer', (c) => c.notNull())
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('imported_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('sanctions_entries')
    .addColumn('snapshot_id', 'bigint', (c) => c.notNull().references('sanctions_snapshots.id').onDelete('cascade'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('lists', sql`text[]`, (c) => c.notNull())
    .addPrimaryKeyConstraint('sanctions_entries_pkey', ['snapshot_id', 'address'])
    .execute();
  await db.schema
    .createTable('sanctions_screenings')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('sanctioned', 'boolean', (c) => c.notNull())
    .addColumn('matched_lists', sql`text[]`, (c) => c.notNull())
    .addColumn('snapshot_id', 'bigint', (c) => c.references('sanctions_snapshots.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('anomaly_checks')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('tx_hash', 'text')
    .addColumn('amount', sql`uint256`)
    .addColumn('type', 'smallint')
    .addColumn('anomaly_detected', 'boolean', (c) => c.notNull())
    .addColumn('risk_score', 'integer', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('flags', 'jsonb', (c) => c.notNull())
    .addColumn('factors', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('anomaly_checks_agent_idx')
    .on('anomaly_checks')
    .columns(['agent', 'created_at'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'api_keys',
    'anomaly_checks',
    'sanctions_screenings',
    'sanctions_entries',
    'sanctions_snapshots',
    'verifications',
    'idempotency_keys',
    'transactions',
    'spends',
    'budgets',
    'score_events',
    'agents',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`DROP DOMAIN IF EXISTS uint256`.execute(db);
}
