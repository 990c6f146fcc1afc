import type { DB, Kysely } from '@vouch/db';
import type { JobRunner } from '@vouch/jobs';
import { createAgentsService } from './agents/agents.service.ts';
import { type AnomalySettings, anomalyModelConstants } from './anomaly/anomaly.model.ts';
import { createAnomalyService } from './anomaly/anomaly.service.ts';
import { createEnrichService } from './anomaly/enrich.service.ts';
import { createAuditService } from './audit/audit.service.ts';
import { createAuthorizationsService } from './budgets/authorizations.service.ts';
import { createBudgetsService } from './budgets/budgets.service.ts';
import type { ReadCache } from './cache/read-cache.ts';
import { createChecksJobs } from './checks/checks.service.ts';
import { createApprovalsService } from './decisions/approvals.service.ts';
import { createDecisionsService } from './decisions/decisions.service.ts';
import { createPoliciesService } from './decisions/policies.service.ts';
import { createErc8004Service, type Erc8004Options } from './erc8004/erc8004.service.ts';
import { createEventsService } from './events/events.service.ts';
import { createIdempotencyService } from './idempotency/idempotency.service.ts';
import { createKeysService } from './keys/keys.service.ts';
import { createOrganizationsService } from './organizations/organizations.service.ts';
import { createSanctionsService } from './sanctions/sanctions.service.ts';
import { createScoresService } from './scores/scores.service.ts';
import { createScoringJobs } from './scores/scoring-jobs.service.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { createChainChecks } from './transactions/chain-checks.service.ts';
import type { ScoreBasis } from './transactions/transactions.model.ts';
import { createTransactionsService } from './transactions/transactions.service.ts';
import { createChainReader } from './verification/chain.ts';
import type { VerificationThresholds } from './verification/verification.model.ts';
import { createVerificationService } from './verification/verification.service.ts';
import { createWebhooksService, type WebhooksSettings } from './webhooks/webhooks.service.ts';

export interface CoreDeps {
  db: Kysely<DB>;
  clock?: Clock;
  /** Where queued work goes: BullMQ or the in-process runner. */
  jobs: JobRunner;
  recomputeChunkSize: number;
  refreshDelayMs?: number;
  onBackgroundError?: (error: unknown, context: Record<string, unknown>) => void;
  /** How far in the future a recorded transaction may be dated. */
  txFutureSkewMs: number;
  /** EVM JSON-RPC endpoint for the chain checks; without it they are reported as not run. */
  chainRpcUrl?: string | undefined;
  chainTimeoutMs: number;
  /** Which recorded transactions the score model counts (SCORE_TRANSACTIONS, resolved); default all. */
  scoreTransactions?: ScoreBasis;
  /** How often the periodic re-check of transactions runs; it leaves a fresh `pending` row this long to its job. */
  txRecheckIntervalMs?: number;
  verification: VerificationThresholds;
  anomaly: AnomalySettings;
  /** How long a review waits for its approval before it expires (and any hold reserved for it). */
  approvalTtlMs?: number;
  /** Read cache for scores and budget rows (API processes). */
  cache?: ReadCache | undefined;
  /** The ERC-8004 registries, the indexer and the feedback export (erc8004Options of @vouch/config). */
  erc8004: Omit<Erc8004Options, 'fetchTimeoutMs'>;
  /** Events and webhooks (docs/events.md); default: on, thresholds 80 and 100 %, private targets refused. */
  events?: EventsOptions;
}

export interface EventsOptions {
  enabled: boolean;
  /** Percentages of a budget limit whose crossing is announced, ascending. */
  budgetThresholds: number[];
  retentionDays: number;
  webhooks: WebhooksSettings;
}

const defaultEvents: EventsOptions = {
  enabled: true,
  budgetThresholds: [80, 100],
  retentionDays: 30,
  webhooks: { timeoutMs: 10_000, allowPrivateTargets: false, disableAfterMs: 5 * 86_400_000 },
};

/** Every use case, wired to one database, clock and job runner; built by the runtime (@vouch/runtime). */
export function createServices(deps: CoreDeps) {
  const clock = deps.clock ?? systemClock;
  const base = { db: deps.db, clock };
  const audit = createAuditService(base);
  const settings = deps.events ?? defaultEvents;
  const events = createEventsService({
    ...base,
    runner: deps.jobs,
    enabled: settings.enabled,
    retentionDays: settings.retentionDays,
    onError: deps.onBackgroundError,
  });
  // One viem client for every chain read: the verification's and the transaction checks'.
  const chain = createChainReader(deps.chainRpcUrl, deps.chainTimeoutMs);
  const basis = deps.scoreTransactions ?? 'all';
  // An indexer run that changed what an agent's identity or feedback says refreshes its score.
  let refresh: (agent: string) => void = () => {};
  const erc8004 = createErc8004Service({
    ...base,
    audit,
    chain,
    options: { ...deps.erc8004, fetchTimeoutMs: deps.chainTimeoutMs },
    onAgentsChanged: (agents) => {
      for (const agent of agents) refresh(agent);
    },
  });
  const scores = createScoresService({
    ...base,
    audit,
    events,
    basis,
    chainConfigured: chain !== null,
    evidence: erc8004.evidence,
  });
  const sanctions = createSanctionsService({
    ...base,
    cache: deps.cache,
    events,
    rescore: (addresses) => scores.recompute(addresses, null),
  });
  const verification = createVerificationService({ ...base, events, chain, thresholds: deps.verification });
  const anomaly = createAnomalyService({
    ...base,
    sanctions,
    verification,
    thresholds: { ...anomalyModelConstants, ...deps.anomaly },
  });
  const scoring = createScoringJobs({
    runner: deps.jobs,
    scores,
    audit,
    chunkSize: deps.recomputeChunkSize,
    cache: deps.cache,
    refreshDelayMs: deps.refreshDelayMs,
    onRefreshError: (error, agent) => deps.onBackgroundError?.(error, { job: 'scores.refresh-agent', agent }),
  });
  refresh = (agent) => scoring.refresh(agent);
  const chainChecks = createChainChecks({
    ...base,
    runner: deps.jobs,
    chain,
    basis,
    // A transaction verified (or no longer counted) changes the agent's score.
    onCountChanged: (agent) => scoring.refresh(agent),
    onEnqueueError: deps.onBackgroundError,
    recheckIntervalMs: deps.txRecheckIntervalMs ?? 60_000,
  });
  const budgets = createBudgetsService({
    ...base,
    audit,
    events,
    budgetThresholds: settings.budgetThresholds,
    cache: deps.cache,
  });
  const agents = createAgentsService({
    ...base,
    audit,
    events,
    cache: deps.cache,
    verifiedOnly: basis === 'verified',
    identityOf: erc8004.identityOf,
  });
  const authorizations = createAuthorizationsService({ ...base, budgets, events });
  const policies = createPoliciesService({ ...base, audit, cache: deps.cache });
  return {
    audit,
    organizations: createOrganizationsService({ ...base, audit }),
    agents,
    erc8004,
    budgets,
    authorizations,
    policies,
    decisions: createDecisionsService({
      ...base,
      audit,
      events,
      agents,
      budgets,
      authorizations,
      policies,
      sanctions,
      anomaly,
      approvalTtlMs: deps.approvalTtlMs ?? 86_400_000,
    }),
    approvals: createApprovalsService({ ...base, audit, events, cache: deps.cache }),
    events,
    webhooks: createWebhooksService({
      ...base,
      runner: deps.jobs,
      audit,
      events,
      settings: settings.webhooks,
      onError: deps.onBackgroundError,
    }),
    scores,
    scoring,
    sanctions,
    verification,
    anomaly,
    enrich: createEnrichService({ ...base, sanctions, verification, anomaly }),
    checks: createChecksJobs({ runner: deps.jobs }),
    chainChecks,
    // Recording a transaction schedules a deduplicated score refresh of its agent and, with a
    // chain configured, the transaction's check against it.
    transactions: createTransactionsService({
      ...base,
      audit,
      onRecorded: ({ agent, txHash, chainStatus }) => {
        scoring.refresh(agent);
        if (chainStatus === 'pending') chainChecks.enqueue(agent, txHash);
      },
      maxFutureSkewMs: deps.txFutureSkewMs,
      verifiesOnChain: chainChecks.enabled,
      cache: deps.cache,
    }),
    idempotency: createIdempotencyService(base),
    keys: createKeysService({ ...base, audit }),
  };
}

export type Services = ReturnType<typeof createServices>;
