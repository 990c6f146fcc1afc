import { type ChainStatus, type DB, type Kysely, sql, type TransactionRow } from '@vouch/db';

type Executor = Kysely<DB>;

export interface NewTransaction {
  agent: string;
  txHash: string;
  amount: string;
  /** CAIP-19 id; '' for the native unit. */
  asset: string;
  type: number;
  success: boolean;
  counterparty: string | null;
  occurredAt: Date;
  recordedAt: Date;
  /** `pending` when a chain is configured (a check is queued), else `unverified`. */
  chainStatus: 'pending' | 'unverified';
}

/** Inserts unless `(agent, txHash)` is already recorded; returns the new row or nothing. */
export function insertTransaction(db: Executor, t: NewTransaction): Promise<TransactionRow | undefined> {
  return db
    .insertInto('transactions')
    .values({
      agent: t.agent,
      tx_hash: t.txHash,
      amount: t.amount,
      asset: t.asset,
      type: t.type,
      success: t.success,
      counterparty: t.counterparty,
      occurred_at: t.occurredAt,
      recorded_at: t.recordedAt,
      chain_status: t.chainStatus,
      // Timestamps are whole seconds: dated before the second the agent was first seen in.
      backdated: sql<boolean>`${t.occurredAt}::timestamptz < (SELECT date_trunc('second', first_seen_at) FROM agents WHERE address = ${t.agent})`,
    })
    .onConflict((oc) => oc.columns(['agent', 'tx_hash']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function findTransaction(db: Executor, agent: string, txHash: string) {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('agent', '=', agent)
    .where('tx_hash', '=', txHash)
    .executeTakeFirst();
}

/**
 * A transaction whose amount is in the native unit (wei), for volume sums: recorded without an
 * asset, and not found by the chain check to be a token transfer (`moved_token`). Amounts of
 * other assets are not comparable with wei, and Vouch holds no prices.
 */
export const nativeAmount = sql<boolean>`(asset = '' AND moved_token IS NULL)`;

export async function transactionStats(db: Executor, agent: string) {
  const result = await sql<{
    total_count: number;
    success_count: number;
    total_volume: string;
    last_time: Date | null;
  }>`
    SELECT count(*)::int AS total_count,
           (count(*) FILTER (WHERE success))::int AS success_count,
           coalesce(sum(amount) FILTER (WHERE ${nativeAmount}), 0)::text AS total_volume,
           max(occurred_at) AS last_time
    FROM transactions WHERE agent = ${agent}`.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error('stats query returned no row');
  return row;
}

/**
 * Stores what the chain said, unless a final state (verified, mismatch) is already stored; returns
 * the state before, or nothing when no row changed. The row is locked for the statement, so two
 * deliveries of the same check cannot both see the old state.
 */
export async function storeChainStatus(
  db: Executor,
  v: { agent: string; txHash: string; status: ChainStatus; detail: string; movedToken: string | null; now: Date },
): Promise<{ previous: ChainStatus } | undefined> {
  const result = await sql<{ previous: ChainStatus }>`
    WITH old AS (
      SELECT id, chain_status FROM transactions
      WHERE agent = ${v.agent} AND tx_hash = ${v.txHash} AND chain_status NOT IN ('verified', 'mismatch')
      FOR UPDATE
    ), stored AS (
      UPDATE transactions t
      SET chain_status = ${v.status}, chain_detail = ${v.detail}, chain_checked_at = ${v.now}, moved_token = ${v.movedToken}
      FROM old WHERE t.id = old.id
      RETURNING old.chain_status AS previous
    )
    -- The agent's cached standing counts its verified transactions (its confidence): every API
    -- process drops it at commit, whether or not the score that follows changes its row.
    SELECT previous, pg_notify('vouch_cache', ${`agents:${v.agent}`}) FROM stored`.execute(db);
  return result.rows[0];
}

/**
 * Transactions whose check should run (again): `pending` ones recorded at least `graceMs` ago
 * (their job was lost, or Redis was away when they were recorded), and `not_found` or
 * `unreachable` ones recorded within `windowMs`, once they have waited since their last check at
 * least `minWaitMs` and as long as they had waited before it. Oldest first.
 */
export async function transactionsToRecheck(
  db: Executor,
  v: { now: Date; graceMs: number; minWaitMs: number; windowMs: number; limit: number },
): Promise<Array<{ agent: string; tx_hash: string }>> {
  const ms = (n: number) => sql`(${n} * interval '1 millisecond')`;
  const now = sql`${v.now}::timestamptz`;
  const result = await sql<{ agent: string; tx_hash: string }>`
    SELECT agent, tx_hash FROM transactions
    WHERE chain_status IN ('pending', 'not_found', 'unreachable')
      AND (
        (chain_status = 'pending' AND recorded_at <= ${now} - ${ms(v.graceMs)})
        OR (
          chain_status <> 'pending' AND recorded_at > ${now} - ${ms(v.windowMs)}
          AND chain_checked_at <= ${now} - greatest(${ms(v.minWaitMs)}, chain_checked_at - recorded_at)
        )
      )
    ORDER BY recorded_at
    LIMIT ${v.limit}`.execute(db);
  return result.rows;
}

/** A page of the agent's recorded transactions, newest recorded first; `limit + 1` rows tell whether there is more. */
export function listTransactions(db: Executor, agent: string, beforeId: string | undefined, limit: number) {
  let query = db
    .selectFrom('transactions')
    .selectAll()
    .select(sql<string>`id::text`.as('id'))
    .where('agent', '=', agent);
  if (beforeId) query = query.where('transactions.id', '<', beforeId);
  return query
    .orderBy('transactions.id', 'desc')
    .limit(limit + 1)
    .execute();
}
