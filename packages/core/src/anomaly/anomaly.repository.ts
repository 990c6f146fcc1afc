import { type DB, type Insertable, type Kysely, sql } from '@vouch/db';
import { nativeAmount } from '../transactions/transactions.repository.ts';

type Executor = Kysely<DB>;

export interface TransactionHistory {
  count30d: number;
  failed30d: number;
  asset_count30d: number;
  volume30d: string;
  last_hour: number;
  /** The earliest of these transactions (null: none). */
  first_at: Date | null;
}

/**
 * The agent's recorded transactions between `since` and `now`: count and failures (of every
 * asset), count and volume in `asset` ('' the native unit, `nativeAmount`), and the count since `hourAgo`; all
 * but `exceptTxHash` (the checked transaction itself when it is already recorded).
 */
export async function transactionHistory(
  db: Executor,
  agent: string,
  asset: string,
  window: { since: Date; hourAgo: Date; now: Date },
  exceptTxHash: string | null = null,
): Promise<TransactionHistory> {
  // In the native unit only what moved it: a record without an asset that the chain check found
  // to be a token transfer is an amount of that token, not of wei (as in every volume sum).
  const sameAsset = asset === '' ? nativeAmount : sql<boolean>`(asset = ${asset})`;
  const result = await sql<TransactionHistory>`
    SELECT count(*)::int AS count30d,
           (count(*) FILTER (WHERE NOT success))::int AS failed30d,
           (count(*) FILTER (WHERE ${sameAsset}))::int AS asset_count30d,
           coalesce(sum(amount) FILTER (WHERE ${sameAsset}), 0)::text AS volume30d,
           (count(*) FILTER (WHERE occurred_at >= ${window.hourAgo}))::int AS last_hour,
           min(occurred_at) AS first_at
    FROM transactions WHERE agent = ${agent} AND occurred_at >= ${window.since} AND occurred_at <= ${window.now}
      AND tx_hash IS DISTINCT FROM ${exceptTxHash}`.execute(db);
  return (
    result.rows[0] ?? { count30d: 0, failed30d: 0, asset_count30d: 0, volume30d: '0', last_hour: 0, first_at: null }
  );
}

export async function insertAnomalyCheck(db: Executor, row: Insertable<DB['anomaly_checks']>): Promise<void> {
  await db.insertInto('anomaly_checks').values(row).execute();
}

/**
 * The agent's latest anomaly check of those the organization asked for: the one made last (its
 * `created_at`, when it was evaluated), not the one stored last — a check whose reads were slow is
 * stored after a later one, and judged the agent as it was before it.
 */
export function latestAnomalyCheck(db: Executor, organizationId: string, agent: string) {
  return db
    .selectFrom('anomaly_checks')
    .select(['severity', 'risk_score', 'created_at'])
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}
