import { type DB, type Kysely, sql, type TransactionRow } from '@vouch/db';

type Executor = Kysely<DB>;

export interface NewTransaction {
  agent: string;
  txHash: string;
  amount: string;
  type: number;
  success: boolean;
  counterparty: string | null;
  occurredAt: Date;
  recordedAt: Date;
}

/** Inserts unless `(agent, txHash)` is already recorded; returns the new row or nothing. */
export function insertTransaction(db: Executor, t: NewTransaction): Promise<TransactionRow | undefined> {
  return db
    .insertInto('transactions')
    .values({
      agent: t.agent,
      tx_hash: t.txHash,
      amount: t.amount,
      type: t.type,
      success: t.success,
      counterparty: t.counterparty,
      occurred_at: t.occurredAt,
      recorded_at: t.recordedAt,
      backdated: sql<boolean>`${t.occurredAt}::timestamptz < (SELECT first_seen_at FROM agents WHERE address = ${t.agent})`,
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

export async function transactionStats(db: Executor, agent: string) {
  const result = await sql<{
    total_count: number;
    success_count: number;
    total_volume: string;
    last_time: Date | null;
  }>`
    SELECT count(*)::int AS total_count,
           (count(*) FILTER (WHERE success))::int AS success_count,
           coalesce(sum(amount), 0)::text AS total_volume,
           max(occurred_at) AS last_time
    FROM transactions WHERE agent = ${agent}`.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error('stats query returned no row');
  return row;
}
