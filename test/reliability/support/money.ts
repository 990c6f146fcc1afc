import type { App } from '@vouch/api';
import type { Database } from '@vouch/db';
import { sql } from '@vouch/db';
import { createAgentWithBudget, randomTxHash } from '@vouch/testkit';
import { expect } from 'vitest';
import type { Answer, HttpClient } from './http.ts';

/** The ledger of one agent as exact integers: accepted sum, counts. */
export async function ledgerTotals(database: Database, agent: string) {
  const result = await sql<{ accepted_sum: string; accepted: number; refused: number }>`
    SELECT coalesce(sum(amount) FILTER (WHERE accepted), 0)::text AS accepted_sum,
           (count(*) FILTER (WHERE accepted))::int AS accepted,
           (count(*) FILTER (WHERE NOT accepted))::int AS refused
    FROM spends WHERE agent = ${agent}`.execute(database.db);
  const row = result.rows[0];
  if (!row) throw new Error('no ledger totals');
  return { acceptedSum: BigInt(row.accepted_sum), accepted: row.accepted, refused: row.refused };
}

export async function budgetRow(database: Database, agent: string) {
  return database.db.selectFrom('budgets').selectAll().where('agent', '=', agent).executeTakeFirstOrThrow();
}

export interface OverspendFigures {
  spends: number;
  connections: number;
  accepted: number;
  refused: number;
  ms: number;
  p50: number;
  p99: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0);
}

/**
 * R1: `spends` spends of `amount` race over `connections` keep-alive connections for one
 * budget whose daily limit admits exactly `admits` of them. Exactly `admits` are accepted,
 * every refusal is a 422 BUDGET_EXCEEDED, nothing is a 5xx, and the budget's counters, the
 * accepted ledger and the limit are the same number.
 */
export async function overspendRun(
  app: App,
  database: Database,
  client: HttpClient,
  opts: { spends: number; connections: number; admits: number; amount: bigint },
): Promise<OverspendFigures> {
  const limit = opts.amount * BigInt(opts.admits);
  const agent = await createAgentWithBudget(app, {
    dailyLimit: limit.toString(),
    monthlyLimit: limit.toString(),
    perTxLimit: opts.amount.toString(),
  });
  const started = performance.now();
  const answers: Answer[] = await Promise.all(
    Array.from({ length: opts.spends }, () =>
      client.post(`/api/budgets/${agent}/spend`, { amount: opts.amount.toString() }, {}, 60_000),
    ),
  );
  const ms = performance.now() - started;

  const unexpected = answers.filter((a) => a.status !== 200 && a.status !== 422);
  expect(unexpected.map((a) => `${a.status} ${a.error ?? JSON.stringify(a.body)}`).slice(0, 5)).toEqual([]);
  const accepted = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 422);
  expect(accepted).toHaveLength(opts.admits);
  for (const r of refused) {
    expect(r.body.error.code).toBe('BUDGET_EXCEEDED');
    expect(r.body.error.details.reason).toBe('DAILY_LIMIT');
  }
  // Every accepted answer names its own ledger row.
  expect(new Set(accepted.map((a) => a.body.data.spendId)).size).toBe(opts.admits);

  const totals = await ledgerTotals(database, agent);
  const row = await budgetRow(database, agent);
  expect(totals).toEqual({ acceptedSum: limit, accepted: opts.admits, refused: opts.spends - opts.admits });
  expect(BigInt(row.daily_spent)).toBe(limit);
  expect(BigInt(row.monthly_spent)).toBe(limit);
  return {
    spends: opts.spends,
    connections: opts.connections,
    accepted: accepted.length,
    refused: refused.length,
    ms: Math.round(ms),
    p50: percentile(
      answers.map((a) => a.ms),
      50,
    ),
    p99: percentile(
      answers.map((a) => a.ms),
      99,
    ),
  };
}

export interface IdempotencyFigures {
  requests: number;
  firsts: number;
  replays: number;
  inProgress: number;
}

/**
 * R2: `requests` identical requests with one Idempotency-Key race; exactly one has an
 * effect (one ledger row, one debit), every other one is a replay of its answer or a 409
 * IDEMPOTENCY_IN_PROGRESS; afterwards the key replays, and the key with another body is 422.
 */
export async function idempotencyRace(
  app: App,
  database: Database,
  client: HttpClient,
  opts: { requests: number },
): Promise<IdempotencyFigures> {
  const agent = await createAgentWithBudget(app, { dailyLimit: '1000000', monthlyLimit: '1000000' });
  const key = `race-${randomTxHash().slice(2, 18)}`;
  const headers = { 'idempotency-key': key };
  const url = `/api/budgets/${agent}/spend`;
  const answers = await Promise.all(
    Array.from({ length: opts.requests }, () => client.post(url, { amount: '7' }, headers, 30_000)),
  );
  for (const a of answers) expect([200, 409], `${a.status} ${JSON.stringify(a.body)}`).toContain(a.status);
  const firsts = answers.filter((a) => a.status === 200 && a.headers['idempotency-replayed'] !== 'true');
  const replays = answers.filter((a) => a.status === 200 && a.headers['idempotency-replayed'] === 'true');
  const inProgress = answers.filter((a) => a.status === 409);
  expect(firsts).toHaveLength(1);
  for (const r of replays) expect(r.body.data).toEqual(firsts[0]?.body.data);
  for (const r of inProgress) expect(r.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');

  const rows = await database.db
    .selectFrom('spends')
    .select(['amount', 'accepted'])
    .where('agent', '=', agent)
    .execute();
  expect(rows).toEqual([{ amount: '7', accepted: true }]);
  expect((await budgetRow(database, agent)).daily_spent).toBe('7');

  // Settled: the same key and body replays; the same key with another body is refused.
  const again = await client.post(url, { amount: '7' }, headers);
  expect(again.status).toBe(200);
  expect(again.headers['idempotency-replayed']).toBe('true');
  expect(again.body.data).toEqual(firsts[0]?.body.data);
  const other = await client.post(url, { amount: '8' }, headers);
  expect(other.status).toBe(422);
  expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  expect(await database.db.selectFrom('spends').select('id').where('agent', '=', agent).execute()).toHaveLength(1);

  // The same holds for recording a transaction under a key.
  const tx = { agent, txHash: randomTxHash(), amount: '5000', type: 0, timestamp: 1_700_000_000 };
  const txHeaders = { 'idempotency-key': `${key}-tx` };
  const records = await Promise.all(
    Array.from({ length: opts.requests }, () => client.post('/api/transactions/record', tx, txHeaders, 30_000)),
  );
  for (const r of records) expect([201, 200, 409], `${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
  expect(records.filter((r) => r.status === 201 && r.headers['idempotency-replayed'] !== 'true')).toHaveLength(1);
  const txRows = await database.db.selectFrom('transactions').select('id').where('agent', '=', agent).execute();
  expect(txRows).toHaveLength(1);
  const otherTx = await client.post('/api/transactions/record', { ...tx, amount: '5001' }, txHeaders);
  expect(otherTx.status).toBe(422);
  expect(otherTx.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');

  return { requests: opts.requests, firsts: firsts.length, replays: replays.length, inProgress: inProgress.length };
}
