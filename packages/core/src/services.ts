import type { DB, Kysely } from '@vouch/db';
import { createAgentsService } from './agents/agents.service.ts';
import { createBudgetsService } from './budgets/budgets.service.ts';
import { createIdempotencyService } from './idempotency/idempotency.service.ts';
import { createScoresService } from './scores/scores.service.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { createTransactionsService } from './transactions/transactions.service.ts';

export interface CoreDeps {
  db: Kysely<DB>;
  clock?: Clock;
  /** Called after a transaction is recorded for an agent. */
  onTransactionRecorded?: (agent: string) => void;
}

/** Every use case, wired to one database and clock. */
export function createServices(deps: CoreDeps) {
  const clock = deps.clock ?? systemClock;
  const base = { db: deps.db, clock };
  return {
    agents: createAgentsService(base),
    budgets: createBudgetsService(base),
    scores: createScoresService(base),
    transactions: createTransactionsService({ ...base, onRecorded: deps.onTransactionRecorded }),
    idempotency: createIdempotencyService(base),
  };
}

export type Services = ReturnType<typeof createServices>;
