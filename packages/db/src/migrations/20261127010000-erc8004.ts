import { type Kysely, sql } from 'kysely';

/**
 * What the ERC-8004 indexer keeps (docs/erc8004.md): a cursor per chain and registry, the agents'
 * identities, the feedback given to them with its responses, and the feedback Vouch gave.
 * Block numbers are int8; agent ids are uint256; feedback values are int128 (numeric(39,0)).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE erc8004_cursors (
      chain_id bigint NOT NULL,
      registry text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('identity', 'reputation')),
      next_block bigint NOT NULL CHECK (next_block >= 0),
      last_block_hash text,
      head_block bigint,
      last_ok_at timestamptz,
      last_error text,
      last_error_at timestamptz,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (chain_id, registry)
    )`.execute(db);
  await sql`
    CREATE TABLE erc8004_identities (
      chain_id bigint NOT NULL,
      registry text NOT NULL,
      agent_id uint256 NOT NULL,
      owner text NOT NULL,
      agent_uri text NOT NULL DEFAULT '',
      agent_wallet text,
      registered_block bigint,
      updated_block bigint NOT NULL,
      PRIMARY KEY (chain_id, registry, agent_id)
    )`.execute(db);
  await sql`CREATE INDEX erc8004_identities_wallet_idx ON erc8004_identities (agent_wallet) WHERE agent_wallet IS NOT NULL`.execute(
    db,
  );
  await sql`CREATE INDEX erc8004_identities_owner_idx ON erc8004_identities (owner)`.execute(db);
  await sql`
    CREATE TABLE erc8004_feedback (
      chain_id bigint NOT NULL,
      registry text NOT NULL,
      agent_id uint256 NOT NULL,
      client text NOT NULL,
      feedback_index bigint NOT NULL,
      value numeric(39, 0) NOT NULL,
      value_decimals smallint NOT NULL,
      tag1 text NOT NULL,
      tag2 text NOT NULL,
      endpoint text NOT NULL,
      feedback_uri text NOT NULL,
      feedback_hash text NOT NULL,
      revoked boolean NOT NULL DEFAULT false,
      block_number bigint NOT NULL,
      tx_hash text NOT NULL,
      log_index integer NOT NULL,
      file_status text NOT NULL
        CHECK (file_status IN ('none', 'pending', 'fetched', 'skipped', 'unsupported', 'unavailable', 'invalid', 'hash_mismatch')),
      file_detail text,
      file_attempts integer NOT NULL DEFAULT 0,
      file_checked_at timestamptz,
      proof_of_payment jsonb,
      PRIMARY KEY (chain_id, registry, agent_id, client, feedback_index),
      UNIQUE (chain_id, tx_hash, log_index)
    )`.execute(db);
  await sql`CREATE INDEX erc8004_feedback_files_idx ON erc8004_feedback (block_number) WHERE file_status = 'pending'`.execute(
    db,
  );
  await sql`
    CREATE TABLE erc8004_responses (
      chain_id bigint NOT NULL,
      tx_hash text NOT NULL,
      log_index integer NOT NULL,
      registry text NOT NULL,
      agent_id uint256 NOT NULL,
      client text NOT NULL,
      feedback_index bigint NOT NULL,
      responder text NOT NULL,
      response_uri text NOT NULL,
      response_hash text NOT NULL,
      block_number bigint NOT NULL,
      PRIMARY KEY (chain_id, tx_hash, log_index)
    )`.execute(db);
  await sql`
    CREATE INDEX erc8004_responses_feedback_idx ON erc8004_responses (chain_id, registry, agent_id, client, feedback_index)`.execute(
    db,
  );
  await sql`
    CREATE TABLE erc8004_exports (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id),
      agent text NOT NULL REFERENCES agents (address),
      chain_id bigint NOT NULL,
      registry text NOT NULL,
      agent_id uint256 NOT NULL,
      client_address text,
      value bigint NOT NULL,
      value_decimals smallint NOT NULL,
      tag1 text NOT NULL,
      tag2 text NOT NULL,
      endpoint text NOT NULL,
      feedback_uri text NOT NULL,
      feedback_hash text NOT NULL,
      file text NOT NULL,
      tx_hash text,
      created_at timestamptz NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX erc8004_exports_agent_idx ON erc8004_exports (agent, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'erc8004_exports',
    'erc8004_responses',
    'erc8004_feedback',
    'erc8004_identities',
    'erc8004_cursors',
  ]) {
    await sql`DROP TABLE ${sql.table(table)}`.execute(db);
  }
}
