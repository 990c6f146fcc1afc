import { type Services, systemActor } from '@vouch/core';
import type { Database, DB } from '@vouch/db';
import { createTestRuntime } from '@vouch/testkit';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';

export interface CapturedQuery {
  /** Where it was captured from. */
  source: string;
  sql: string;
  parameters: unknown[];
}

/**
 * Runs a use case of packages/core against a Kysely instance that compiles queries
 * for PostgreSQL but executes nothing (its driver answers no rows), and returns the
 * statements it sent, exactly as the pg driver would receive them. The baselines
 * replay these with a plain `pg` client, so they follow the product's SQL if it changes.
 */
async function capture(source: string, clock: () => Date, use: (services: Services) => Promise<unknown>) {
  const queries: CapturedQuery[] = [];
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (event) => {
      queries.push({ source, sql: event.query.sql, parameters: [...event.query.parameters] });
    },
  });
  // With no rows the use case ends in a "not found" error after its first statement; that is expected.
  const database: Database = {
    db,
    driver: 'postgres',
    ping: async () => {},
    listen: async () => ({ proven: () => false, close: async () => {} }),
    close: () => db.destroy(),
  };
  const runtime = await createTestRuntime(database, { migrate: false, loadSanctions: false, clock });
  await use(runtime.services).catch(() => {});
  await runtime.close();
  await db.destroy();
  const first = queries[0];
  if (!first) throw new Error(`${source} issued no SQL`);
  return first;
}

/** GET /api/agents/:address/score → services.agents.getScore → its first (and on success only) statement. */
export function scoreRouteSql(address: string): Promise<CapturedQuery> {
  return capture(
    'services.agents.getScore (GET /api/agents/:address/score)',
    () => new Date(),
    (s) => s.agents.getScore(address),
  );
}

/**
 * POST /api/budgets/:address/spend (no Idempotency-Key) → services.budgets.spend → its first
 * statement, the one-statement conditional debit + ledger insert (budgets.repository.ts `spend`).
 * `refresh(params)` gives the parameters with "now" set to the current time (day and month windows kept).
 */
export async function spendSql(
  address: string,
  amount: string,
): Promise<CapturedQuery & { refresh: () => unknown[]; nowPositions: number[] }> {
  const now = new Date();
  const query = await capture(
    'services.budgets.spend (POST /api/budgets/:address/spend)',
    () => now,
    (s) => s.budgets.spend(systemActor(), address, { amount }),
  );
  // The clock's Date object is passed through as-is wherever the statement uses "now".
  const nowPositions = query.parameters.flatMap((p, i) => (p === now ? [i] : []));
  return {
    ...query,
    nowPositions,
    refresh: () => {
      const params = [...query.parameters];
      const current = new Date();
      for (const i of nowPositions) params[i] = current;
      return params;
    },
  };
}
