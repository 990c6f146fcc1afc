import { type Kysely, sql } from 'kysely';
import { auditAppendOnlyV1 } from '../functions.ts';

/** The organization every row of a single-tenant install belongs to. */
const DEFAULT_ORGANIZATION = 'default';
/** The hash an organization's audit chain starts from. */
const GENESIS_HASH = '0'.repeat(64);

/**
 * Organizations: API keys belong to one; budgets, the spend ledger and idempotency keys are
 * kept per organization; a registered agent is owned by the organization that registered it;
 * every write is in a per-organization, hash-chained, append-only audit log. Everything that
 * exists moves into the `default` organization, so a single-tenant install keeps working.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey().check(sql`id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('rate_limit_per_minute', 'integer', (c) => c.check(sql`rate_limit_per_minute > 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`INSERT INTO organizations (id, name) VALUES (${DEFAULT_ORGANIZATION}, 'Default organization')`.execute(db);

  // Keys: their organization, and the finer scopes (`write` was spend + manage + score).
  await sql`ALTER TABLE api_keys ADD COLUMN organization_id text NOT NULL DEFAULT ${sql.lit(DEFAULT_ORGANIZATION)}
    REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE api_keys ALTER COLUMN organization_id DROP DEFAULT`.execute(db);
  await sql`CREATE INDEX api_keys_organization_idx ON api_keys (organization_id, created_at)`.execute(db);
  await sql`UPDATE api_keys SET scopes = ARRAY(
      SELECT DISTINCT s FROM unnest(array_remove(scopes, 'write') ||
        CASE WHEN 'write' = ANY (scopes) THEN ARRAY['spend', 'manage', 'score'] ELSE ARRAY[]::text[] END) AS s
      ORDER BY s)
    WHERE 'write' = ANY (scopes)`.execute(db);

  // Agents stay global; a registered agent is owned by the organization that registered it.
  await sql`ALTER TABLE agents ADD COLUMN organization_id text REFERENCES organizations (id)`.execute(db);
  await sql`UPDATE agents SET organization_id = ${DEFAULT_ORGANIZATION} WHERE is_registered`.execute(db);

  // Budgets: one per organization and agent.
  await sql`ALTER TABLE budgets ADD COLUMN organization_id text NOT NULL DEFAULT ${sql.lit(DEFAULT_ORGANIZATION)}
    REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE budgets ALTER COLUMN organization_id DROP DEFAULT`.execute(db);
  await sql`ALTER TABLE budgets DROP CONSTRAINT budgets_pkey`.execute(db);
  await sql`ALTER TABLE budgets ADD PRIMARY KEY (organization_id, agent)`.execute(db);
  await sql`CREATE INDEX budgets_agent_idx ON budgets (agent)`.execute(db);

  // The spend ledger: whose budget, and which key spent.
  await sql`ALTER TABLE spends ADD COLUMN organization_id text NOT NULL DEFAULT ${sql.lit(DEFAULT_ORGANIZATION)}
    REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE spends ALTER COLUMN organization_id DROP DEFAULT`.execute(db);
  await sql`ALTER TABLE spends ADD COLUMN actor_key_id text`.execute(db);
  await sql`CREATE INDEX spends_organization_agent_idx ON spends (organization_id, agent, id)`.execute(db);

  // Idempotency keys are an organization's own.
  await sql`ALTER TABLE idempotency_keys ADD COLUMN organization_id text NOT NULL
    DEFAULT ${sql.lit(DEFAULT_ORGANIZATION)} REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE idempotency_keys ALTER COLUMN organization_id DROP DEFAULT`.execute(db);
  await sql`ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey`.execute(db);
  await sql`ALTER TABLE idempotency_keys ADD PRIMARY KEY (organization_id, scope, key)`.execute(db);

  // Who set a score by hand or in a batch (the model's changes have no actor).
  await sql`ALTER TABLE score_events ADD COLUMN organization_id text REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE score_events ADD COLUMN actor_key_id text`.execute(db);

  // The audit log: per organization, each entry chained to the one before by its hash.
  await db.schema
    .createTable('audit_log')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull().check(sql`actor IN ('key', 'admin', 'anonymous', 'system')`))
    .addColumn('actor_key_id', 'text')
    .addColumn('target', 'text')
    .addColumn('request_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_log_pkey', ['organization_id', 'seq'])
    .execute();
  await sql`CREATE INDEX audit_log_time_idx ON audit_log (organization_id, created_at)`.execute(db);
  await sql`CREATE INDEX audit_log_target_idx ON audit_log (organization_id, target, seq)`.execute(db);
  await sql`CREATE INDEX audit_log_action_idx ON audit_log (organization_id, action, seq)`.execute(db);
  await db.schema
    .createTable('audit_heads')
    .addColumn('organization_id', 'text', (c) => c.primaryKey().references('organizations.id'))
    .addColumn('seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
  await sql`INSERT INTO audit_heads (organization_id, seq, prev_hash, hash)
    VALUES (${DEFAULT_ORGANIZATION}, 0, ${GENESIS_HASH}, ${GENESIS_HASH})`.execute(db);
  await auditAppendOnlyV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await auditAppendOnlyV1.drop(db);
  await db.schema.dropTable('audit_heads').ifExists().execute();
  await db.schema.dropTable('audit_log').ifExists().execute();
  await sql`ALTER TABLE score_events DROP COLUMN actor_key_id, DROP COLUMN organization_id`.execute(db);
  // Going back to one organization keeps the default one's rows.
  await sql`DELETE FROM idempotency_keys WHERE organization_id <> ${DEFAULT_ORGANIZATION}`.execute(db);
  await sql`ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey`.execute(db);
  await sql`ALTER TABLE idempotency_keys DROP COLUMN organization_id`.execute(db);
  await sql`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope, key)`.execute(db);
  await sql`DELETE FROM spends WHERE organization_id <> ${DEFAULT_ORGANIZATION}`.execute(db);
  await sql`ALTER TABLE spends DROP COLUMN actor_key_id, DROP COLUMN organization_id`.execute(db);
  await sql`DELETE FROM budgets WHERE organization_id <> ${DEFAULT_ORGANIZATION}`.execute(db);
  await sql`DROP INDEX IF EXISTS budgets_agent_idx`.execute(db);
  await sql`ALTER TABLE budgets DROP CONSTRAINT budgets_pkey`.execute(db);
  await sql`ALTER TABLE budgets DROP COLUMN organization_id`.execute(db);
  await sql`ALTER TABLE budgets ADD CONSTRAINT budgets_pkey PRIMARY KEY (agent)`.execute(db);
  await sql`ALTER TABLE agents DROP COLUMN organization_id`.execute(db);
  await sql`DELETE FROM api_keys WHERE organization_id <> ${DEFAULT_ORGANIZATION}`.execute(db);
  // `write` is spend + manage + score: only a key holding all three gets it back; a key with some
  // of them (or `approve`) loses those rather than gain the others.
  await sql`UPDATE api_keys SET scopes = ARRAY(
      SELECT DISTINCT s FROM unnest(
        array_remove(array_remove(array_remove(array_remove(scopes, 'spend'), 'manage'), 'score'), 'approve') ||
        CASE WHEN scopes @> ARRAY['spend', 'manage', 'score'] THEN ARRAY['write'] ELSE ARRAY[]::text[] END
      ) AS s ORDER BY s)`.execute(db);
  await sql`ALTER TABLE api_keys DROP COLUMN organization_id`.execute(db);
  await db.schema.dropTable('organizations').ifExists().execute();
}
