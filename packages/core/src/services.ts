import type { DB, Kysely } from '@vouch/db';
import type { JobRunner } from '@vouch/jobs';
import { createAgentsService } from './agents/agents.service.ts';
import { createBudgetsService } from './budgets/budgets.service.ts';
import { createIdempotencyService } from './idempotency/idempotency.service.ts';
import { createScoresService } from './scores/scores.service.ts';
import { createScoringJobs } from './scores/scoring-jobs.service.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { createTransactionsService } from './transactions/transactions.service.ts';

export interface CoreDeps {
  db: Kysely<DB>;
  clock?: Clock;
  /** Where queued work goes; without it the queued use cases are absent. */
  jobs?: JobRunner;
  recomputeChunkSize?: number;
  refreshDelayMs?: number;
  onBackgroundError?: (error: unknown, context: Record<string, unknown>) => void;
}

/** Every use case, wired to one database and clock. */
export function createServices(deps: CoreDeps) {
  const clock = deps.clock ?? systemClock;
  const base = { db: deps.db, clock };
  const scores = createScoresService(base);
  const scoring = deps.jobs
    ? createScoringJobs({
        runner: deps.jobs,
        scores,
        chunkSize: deps.recomputeChunkSize,
        refreshDelayMs: deps.refreshDelayMs,
        onRefreshError: (error, agent) => deps.onBackgroundError?.(error, { job: 'scores.refresh-agent', agent }),
      })
    : undefined;
  return {
    agents: createAgentsService(base),
    budgets: createBudgetsService(base),
    scores,
    scoring,
    // Recording a transaction schedules a deduplicated score refresh of its agent.
    transactions: createTransactionsService({
      ...base,
      onRecorded: scoring ? (agent) => scoring.refresh(agent) : undefined,
    }),
    idempotency: createIdempotencyService(base),
  };
}

export type Services = ReturnType<typeof createServices>;
