import { type DB, type Kysely, sql, type Transaction } from '@vouch/db';
import { sanctionedSql } from '../sanctions/sanctions.repository.ts';
import type { ProofOfPayment } from './erc8004.model.ts';

type Executor = Kysely<DB> | Transaction<DB>;

export interface CursorRow {
  chain_id: string;
  registry: string;
  kind: 'identity' | 'reputation';
  next_block: string;
  last_block_hash: string | null;
  head_block: string | null;
  last_ok_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
}

const cursorColumns = sql`chain_id::text AS chain_id, registry, kind, next_block::text AS next_block, last_block_hash,
  head_block::text AS head_block, last_ok_at, last_error, last_error_at`;

/** The registry's cursor on this chain, created at `startBlock` the first time. */
export async function ensureCursor(
  db: Executor,
  v: { chainId: number; registry: string; kind: 'identity' | 'reputation'; startBlock: bigint; now: Date },
): Promise<CursorRow> {
  await sql`
    INSERT INTO erc8004_cursors (chain_id, registry, kind, next_block, updated_at)
    VALUES (${v.chainId}, ${v.registry}, ${v.kind}, ${v.startBlock.toString()}, ${v.now})
    ON CONFLICT (chain_id, registry) DO NOTHING`.execute(db);
  const row = await sql<CursorRow>`SELECT ${cursorColumns} FROM erc8004_cursors
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry}`.execute(db);
  return row.rows[0] as CursorRow;
}

/** The cursor, locked for the rest of the transaction (one range is applied by one run). */
export async function lockCursor(trx: Executor, chainId: number, registry: string): Promise<CursorRow | undefined> {
  const row = await sql<CursorRow>`SELECT ${cursorColumns} FROM erc8004_cursors
    WHERE chain_id = ${chainId} AND registry = ${registry} FOR UPDATE`.execute(trx);
  return row.rows[0];
}

export async function advanceCursor(
  trx: Executor,
  v: { chainId: number; registry: string; nextBlock: bigint; blockHash: string | null; now: Date },
): Promise<void> {
  await sql`
    UPDATE erc8004_cursors SET next_block = ${v.nextBlock.toString()}, last_block_hash = ${v.blockHash},
      last_ok_at = ${v.now}, last_error = NULL, last_error_at = NULL, updated_at = ${v.now}
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry}`.execute(trx);
}

/** A registry with nothing left to index up to the run's head: that it succeeded. */
export async function touchCursor(db: Executor, v: { chainId: number; registry: string; now: Date }): Promise<void> {
  await sql`
    UPDATE erc8004_cursors SET last_ok_at = ${v.now}, last_error = NULL, last_error_at = NULL, updated_at = ${v.now}
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry}`.execute(db);
}

/**
 * The head a run indexed towards, set on every cursor once the run's ranges are done: published
 * while one registry is caught up to it and the other not yet, it would make the index read as
 * behind in the middle of every run (and a score computed then lose its positive adjustment).
 * A run that saw an older head (it began before another that finished first) moves none back.
 */
export async function publishHead(
  db: Executor,
  v: { chainId: number; registries: string[]; head: bigint; now: Date },
): Promise<void> {
  await sql`
    UPDATE erc8004_cursors SET head_block = greatest(head_block, ${v.head.toString()}::bigint), updated_at = ${v.now}
    WHERE chain_id = ${v.chainId} AND registry = ANY(${v.registries}::text[])`.execute(db);
}

/**
 * A run that failed: the cursor stays where it was. Without the chain's id (the node did not say
 * it), the chain indexed last is the one that failed: marking every chain's cursors at the same
 * moment would leave which one is "indexed last" to chance (the registries have the same address
 * on every chain).
 */
export async function cursorFailed(
  db: Executor,
  v: { registries: string[]; error: string; now: Date; chainId?: number },
): Promise<void> {
  const chain =
    v.chainId === undefined
      ? sql`(SELECT chain_id FROM erc8004_cursors WHERE registry = ANY(${v.registries}::text[]) ORDER BY updated_at DESC LIMIT 1)`
      : sql`${v.chainId}`;
  await sql`
    UPDATE erc8004_cursors SET last_error = ${v.error.slice(0, 500)}, last_error_at = ${v.now}, updated_at = ${v.now}
    WHERE registry = ANY(${v.registries}::text[]) AND chain_id = ${chain}`.execute(db);
}

/** The cursors of these registries on the chain indexed last (the one CHAIN_RPC_URL points at). */
export async function currentCursors(db: Executor, registries: string[]): Promise<CursorRow[]> {
  const rows = await sql<CursorRow>`
    SELECT ${cursorColumns} FROM erc8004_cursors
    WHERE registry = ANY(${registries}::text[]) AND chain_id = (
      SELECT chain_id FROM erc8004_cursors WHERE registry = ANY(${registries}::text[]) ORDER BY updated_at DESC LIMIT 1
    )`.execute(db);
  return rows.rows;
}

// ── Identity events ─────────────────────────────────────────────────────────────────────────

interface IdentityKey {
  chainId: number;
  registry: string;
  agentId: string;
  block: bigint;
}

/** The addresses an identity stands for now (its owner and its wallet), before an event changes them. */
export async function identityHolders(trx: Executor, v: Omit<IdentityKey, 'block'>): Promise<string[]> {
  const { rows } = await sql<{ owner: string | null; agent_wallet: string | null }>`
    SELECT owner, agent_wallet FROM erc8004_identities
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry} AND agent_id = ${v.agentId}`.execute(trx);
  return rows.flatMap((r) => [r.owner, r.agent_wallet]).filter((a): a is string => a !== null);
}

/** Transfer: a mint creates the identity, a transfer changes its owner (the agentWallet is cleared by its own event). */
export async function identityOwner(trx: Executor, v: IdentityKey & { owner: string; minted: boolean }): Promise<void> {
  await sql`
    INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, minted_to, registered_block, updated_block)
    VALUES (${v.chainId}, ${v.registry}, ${v.agentId}, ${v.owner}, ${v.minted ? v.owner : null},
      ${v.minted ? v.block.toString() : null}, ${v.block.toString()})
    ON CONFLICT (chain_id, registry, agent_id) DO UPDATE SET owner = excluded.owner,
      minted_to = coalesce(excluded.minted_to, erc8004_identities.minted_to), updated_block = excluded.updated_block`.execute(
    trx,
  );
}

export async function identityRegistered(
  trx: Executor,
  v: IdentityKey & { owner: string; uri: string },
): Promise<void> {
  await sql`
    INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, minted_to, agent_uri, registered_block, updated_block)
    VALUES (${v.chainId}, ${v.registry}, ${v.agentId}, ${v.owner}, ${v.owner}, ${v.uri}, ${v.block.toString()}, ${v.block.toString()})
    ON CONFLICT (chain_id, registry, agent_id) DO UPDATE SET agent_uri = excluded.agent_uri,
      registered_block = coalesce(erc8004_identities.registered_block, excluded.registered_block),
      minted_to = coalesce(erc8004_identities.minted_to, excluded.minted_to),
      updated_block = excluded.updated_block`.execute(trx);
}

export async function identityUri(trx: Executor, v: IdentityKey & { uri: string }): Promise<void> {
  await sql`
    UPDATE erc8004_identities SET agent_uri = ${v.uri}, updated_block = ${v.block.toString()}
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry} AND agent_id = ${v.agentId}`.execute(trx);
}

export async function identityWallet(trx: Executor, v: IdentityKey & { wallet: string | null }): Promise<void> {
  await sql`
    UPDATE erc8004_identities SET agent_wallet = ${v.wallet}, updated_block = ${v.block.toString()}
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry} AND agent_id = ${v.agentId}`.execute(trx);
}

// ── Reputation events ───────────────────────────────────────────────────────────────────────

export interface NewFeedbackValues {
  chainId: number;
  registry: string;
  agentId: string;
  client: string;
  feedbackIndex: string;
  value: string;
  decimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedbackUri: string;
  feedbackHash: string;
  block: bigint;
  txHash: string;
  logIndex: number;
  fileStatus: 'none' | 'pending' | 'skipped';
}

/** Keyed twice — by the log and by (agent, client, index) — so a log applied again changes nothing. */
export async function insertFeedback(trx: Executor, v: NewFeedbackValues): Promise<boolean> {
  const result = await sql`
    INSERT INTO erc8004_feedback (chain_id, registry, agent_id, client, feedback_index, value, value_decimals, tag1, tag2,
      endpoint, feedback_uri, feedback_hash, block_number, tx_hash, log_index, file_status)
    VALUES (${v.chainId}, ${v.registry}, ${v.agentId}, ${v.client}, ${v.feedbackIndex}, ${v.value}, ${v.decimals},
      ${v.tag1}, ${v.tag2}, ${v.endpoint}, ${v.feedbackUri}, ${v.feedbackHash}, ${v.block.toString()}, ${v.txHash},
      ${v.logIndex}, ${v.fileStatus})
    ON CONFLICT DO NOTHING`.execute(trx);
  return Number(result.numAffectedRows ?? 0) > 0;
}

export async function revokeFeedback(
  trx: Executor,
  v: { chainId: number; registry: string; agentId: string; client: string; feedbackIndex: string },
): Promise<void> {
  await sql`
    UPDATE erc8004_feedback SET revoked = true
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry} AND agent_id = ${v.agentId} AND client = ${v.client}
      AND feedback_index = ${v.feedbackIndex}`.execute(trx);
}

export async function insertResponse(
  trx: Executor,
  v: {
    chainId: number;
    registry: string;
    agentId: string;
    client: string;
    feedbackIndex: string;
    responder: string;
    uri: string;
    hash: string;
    block: bigint;
    txHash: string;
    logIndex: number;
  },
): Promise<void> {
  await sql`
    INSERT INTO erc8004_responses (chain_id, tx_hash, log_index, registry, agent_id, client, feedback_index, responder,
      response_uri, response_hash, block_number)
    VALUES (${v.chainId}, ${v.txHash}, ${v.logIndex}, ${v.registry}, ${v.agentId}, ${v.client}, ${v.feedbackIndex},
      ${v.responder}, ${v.uri}, ${v.hash}, ${v.block.toString()})
    ON CONFLICT DO NOTHING`.execute(trx);
}

// ── Feedback files ──────────────────────────────────────────────────────────────────────────

export interface PendingFile {
  chain_id: string;
  registry: string;
  agent_id: string;
  client: string;
  feedback_index: string;
  feedback_uri: string;
  feedback_hash: string;
  file_attempts: number;
}

export async function pendingFiles(db: Executor, limit: number): Promise<PendingFile[]> {
  const rows = await sql<PendingFile>`
    SELECT chain_id::text AS chain_id, registry, agent_id::text AS agent_id, client, feedback_index::text AS feedback_index,
      feedback_uri, feedback_hash, file_attempts
    FROM erc8004_feedback WHERE file_status = 'pending' ORDER BY block_number, log_index LIMIT ${limit}`.execute(db);
  return rows.rows;
}

export async function storeFile(
  db: Executor,
  key: PendingFile,
  v: { status: string; detail: string | null; proof: ProofOfPayment | null; attempts: number; now: Date },
): Promise<void> {
  await sql`
    UPDATE erc8004_feedback SET file_status = ${v.status}, file_detail = ${v.detail},
      proof_of_payment = ${v.proof === null ? null : JSON.stringify(v.proof)}::jsonb, file_attempts = ${v.attempts},
      file_checked_at = ${v.now}
    WHERE chain_id = ${key.chain_id} AND registry = ${key.registry} AND agent_id = ${key.agent_id}
      AND client = ${key.client} AND feedback_index = ${key.feedback_index}`.execute(db);
}

// ── Reads ───────────────────────────────────────────────────────────────────────────────────

export interface IdentityRow {
  chain_id: string;
  agent_id: string;
  owner: string;
  agent_uri: string;
  agent_wallet: string | null;
  minted_to: string | null;
}

/** Identities on the chain whose wallet or owner is one of these addresses, by agent id (as a number, not text: 9 before 10). */
export async function identitiesFor(
  db: Executor,
  v: { chainId: string; registry: string; addresses: string[] },
): Promise<IdentityRow[]> {
  const rows = await sql<IdentityRow>`
    SELECT chain_id::text AS chain_id, agent_id::text AS agent_id, owner, agent_uri, agent_wallet, minted_to
    FROM erc8004_identities
    WHERE chain_id = ${v.chainId} AND registry = ${v.registry}
      AND (agent_wallet = ANY(${v.addresses}::text[]) OR owner = ANY(${v.addresses}::text[]))
    ORDER BY erc8004_identities.agent_id`.execute(db);
  return rows.rows;
}

/** Which of these addresses are Vouch agents. */
export async function knownAgents(db: Executor, addresses: string[]): Promise<string[]> {
  if (addresses.length === 0) return [];
  const { rows } = await sql<{ address: string }>`
    SELECT address FROM agents WHERE address = ANY(${addresses}::text[])`.execute(db);
  return rows.map((r) => r.address);
}

/**
 * The Vouch agents that stand for an identity with feedback on the chain: those whose score may
 * hold a positive adjustment, which a failing index no longer vouches for.
 */
export async function agentsWithFeedback(db: Executor, v: { identityRegistry: string; reputationRegistry: string }) {
  const { rows } = await sql<{ address: string }>`
    SELECT DISTINCT a.address FROM erc8004_identities i
    JOIN agents a ON a.address = i.agent_wallet OR a.address = i.owner
    WHERE i.registry = ${v.identityRegistry} AND EXISTS (
      SELECT 1 FROM erc8004_feedback f
      WHERE f.chain_id = i.chain_id AND f.registry = ${v.reputationRegistry} AND f.agent_id = i.agent_id)`.execute(db);
  return rows.map((r) => r.address);
}

/** The Vouch agents an identity may stand for (its wallet or its owner): their scores change with it. */
export async function agentsOfIdentities(
  db: Executor,
  v: { chainId: number; registry: string; agentIds: string[] },
): Promise<string[]> {
  if (v.agentIds.length === 0) return [];
  const rows = await sql<{ address: string }>`
    SELECT DISTINCT a.address FROM erc8004_identities i
    JOIN agents a ON a.address = i.agent_wallet OR a.address = i.owner
    WHERE i.chain_id = ${v.chainId} AND i.registry = ${v.registry} AND i.agent_id = ANY(${v.agentIds}::numeric[])`.execute(
    db,
  );
  return rows.rows.map((r) => r.address);
}

export interface FeedbackRow {
  agent_id: string;
  client: string;
  feedback_index: string;
  value: string;
  value_decimals: number;
  tag1: string;
  tag2: string;
  revoked: boolean;
  file_status: string;
  proof_of_payment: ProofOfPayment | null;
  responses: number;
  client_score: number | null;
  client_owner: string | null;
  client_sanctioned: boolean;
  /**
   * A sanctions list was active when the row was read (in the same statement as
   * `client_sanctioned`): without one no client could be screened, and `client_sanctioned` is false.
   */
  list_active: boolean;
  /** The client is the wallet or the owner of an identity held by the same owner. */
  client_sibling: boolean;
  /** A transaction recorded from the client to proofOfPayment's recipient, with its hash, counted by the model. */
  payment_recorded: boolean;
}

/** The feedback given to these identities, with what Vouch knows of each client. */
export async function feedbackFor(
  db: Executor,
  v: {
    chainId: string;
    identityRegistry: string;
    reputationRegistry: string;
    agentIds: string[];
    verifiedOnly: boolean;
  },
): Promise<FeedbackRow[]> {
  const counted = v.verifiedOnly ? sql`t.chain_status = 'verified'` : sql`true`;
  const rows = await sql<FeedbackRow>`
    SELECT f.agent_id::text AS agent_id, f.client, f.feedback_index::text AS feedback_index, f.value::text AS value,
      f.value_decimals, f.tag1, f.tag2, f.revoked, f.file_status, f.proof_of_payment,
      (SELECT count(*)::int FROM erc8004_responses r WHERE r.chain_id = f.chain_id AND r.registry = f.registry
        AND r.agent_id = f.agent_id AND r.client = f.client AND r.feedback_index = f.feedback_index) AS responses,
      c.score AS client_score, c.owner AS client_owner, ${sanctionedSql('f.client')} AS client_sanctioned,
      EXISTS (SELECT 1 FROM sanctions_snapshots WHERE is_active) AS list_active,
      EXISTS (SELECT 1 FROM erc8004_identities s WHERE s.chain_id = i.chain_id AND s.registry = i.registry
        AND s.owner = i.owner AND (s.agent_wallet = f.client OR s.owner = f.client)) AS client_sibling,
      (f.proof_of_payment IS NOT NULL AND EXISTS (
        SELECT 1 FROM transactions t WHERE t.agent = f.client AND t.tx_hash = f.proof_of_payment->>'txHash'
          AND t.counterparty = f.proof_of_payment->>'toAddress' AND t.success AND ${counted})) AS payment_recorded
    FROM erc8004_feedback f
    JOIN erc8004_identities i ON i.chain_id = f.chain_id AND i.registry = ${v.identityRegistry} AND i.agent_id = f.agent_id
    LEFT JOIN agents c ON c.address = f.client
    WHERE f.chain_id = ${v.chainId} AND f.registry = ${v.reputationRegistry}
      AND f.agent_id = ANY(${v.agentIds}::numeric[])
    ORDER BY f.agent_id, f.block_number, f.log_index`.execute(db);
  return rows.rows;
}

export async function ownersOf(db: Executor, addresses: string[]): Promise<Map<string, string | null>> {
  const rows = await db.selectFrom('agents').select(['address', 'owner']).where('address', 'in', addresses).execute();
  return new Map(rows.map((r) => [r.address, r.owner]));
}

// ── Exports ─────────────────────────────────────────────────────────────────────────────────

export async function insertExport(
  trx: Executor,
  v: {
    id: string;
    organizationId: string;
    agent: string;
    chainId: string;
    registry: string;
    agentId: string;
    client: string | null;
    value: number;
    decimals: number;
    tag1: string;
    tag2: string;
    endpoint: string;
    feedbackUri: string;
    feedbackHash: string;
    file: string;
    txHash: string | null;
    now: Date;
  },
): Promise<void> {
  await trx
    .insertInto('erc8004_exports')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      agent: v.agent,
      chain_id: v.chainId,
      registry: v.registry,
      agent_id: v.agentId,
      client_address: v.client,
      value: v.value,
      value_decimals: v.decimals,
      tag1: v.tag1,
      tag2: v.tag2,
      endpoint: v.endpoint,
      feedback_uri: v.feedbackUri,
      feedback_hash: v.feedbackHash,
      file: v.file,
      tx_hash: v.txHash,
      created_at: v.now,
    })
    .execute();
}

export async function findExportFile(db: Executor, agent: string, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('erc8004_exports')
    .select('file')
    .where('agent', '=', agent)
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.file;
}
