import { randomBytes } from 'node:crypto';
import { sleep } from '@vouch/testkit';
import { expect } from 'vitest';
import type { Answer, HttpClient } from './http.ts';

export interface SpendRecord {
  key: string;
  agent: string;
  client: HttpClient;
  answers: Answer[];
}

/** Spends whose answer decided them: accepted (200) or refused (422). */
const definitive = (a: Answer | undefined) => a !== undefined && (a.status === 200 || a.status === 422);

/**
 * Continuous spends of 1 under unique Idempotency-Keys, `concurrency` at a time per client,
 * until stopped: the load that runs while servers are stopped and connections killed.
 * Every answer is kept, so that afterwards each spend can be settled and the ledger checked.
 */
export function spendLoad(targets: Array<{ client: HttpClient; agent: string }>, concurrency: number) {
  const records: SpendRecord[] = [];
  let running = true;
  const loops = targets.flatMap(({ client, agent }) =>
    Array.from({ length: concurrency }, async () => {
      while (running) {
        const record: SpendRecord = { key: `load-${randomBytes(8).toString('hex')}`, agent, client, answers: [] };
        records.push(record);
        record.answers.push(
          await client.post(`/api/budgets/${agent}/spend`, { amount: '1' }, { 'idempotency-key': record.key }, 10_000),
        );
        await sleep(20);
      }
    }),
  );
  return {
    records,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * Retries every spend whose answer was not definitive (a 503, a dropped connection) with its
 * own key until it is, then checks the books: one ledger row per key, the accepted ones are
 * exactly those answered 200, and the budget's counter is their sum. Nothing partial, nothing
 * lost, nothing twice.
 */
export async function settleAndCheck(
  records: SpendRecord[],
  ledger: (agent: string) => Promise<{ rows: number; accepted: number; spent: bigint }>,
): Promise<{ spends: number; retried: number; unavailable: number }> {
  let retried = 0;
  for (const record of records) {
    for (let attempt = 0; !definitive(record.answers.at(-1)); attempt++) {
      expect(attempt, `spend ${record.key} never settled: ${JSON.stringify(record.answers.at(-1)?.body)}`).toBeLessThan(
        50,
      );
      if (attempt > 0) await sleep(100);
      retried++;
      record.answers.push(
        await record.client.post(
          `/api/budgets/${record.agent}/spend`,
          { amount: '1' },
          { 'idempotency-key': record.key },
        ),
      );
    }
  }
  // Every answer was a definitive one, a 503, a 409 (its twin still running) or no answer at all.
  for (const record of records) {
    for (const a of record.answers) {
      expect([200, 422, 503, 409, 0], `${a.status} ${JSON.stringify(a.body)}`).toContain(a.status);
      if (a.status === 503) expect(a.body.error.code).toBe('SERVICE_UNAVAILABLE');
    }
  }
  for (const agent of new Set(records.map((r) => r.agent))) {
    const mine = records.filter((r) => r.agent === agent);
    const accepted = mine.filter((r) => r.answers.at(-1)?.status === 200).length;
    const books = await ledger(agent);
    expect(books).toEqual({ rows: mine.length, accepted, spent: BigInt(accepted) });
  }
  return {
    spends: records.length,
    retried,
    unavailable: records.filter((r) => r.answers.some((a) => a.status === 503)).length,
  };
}
