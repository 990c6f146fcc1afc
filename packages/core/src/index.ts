export * from './agents/agents.model.ts';
export { type AgentsService, assertOwns, createAgentsService } from './agents/agents.service.ts';
export * from './anomaly/anomaly.model.ts';
export { type AnomalyInput, type AnomalyService, createAnomalyService } from './anomaly/anomaly.service.ts';
export { createEnrichService, type EnrichService } from './anomaly/enrich.service.ts';
export * from './audit/audit.model.ts';
export { type AuditService, auditMeta, createAuditService } from './audit/audit.service.ts';
export * from './budgets/budgets.model.ts';
export { type BudgetsService, createBudgetsService } from './budgets/budgets.service.ts';
export {
  CACHE_CHANNEL,
  type CacheInvalidation,
  type CacheSpace,
  cacheInvalidations,
  createReadCache,
  type ReadCache,
} from './cache/read-cache.ts';
export { type ChecksJobs, createChecksJobs } from './checks/checks.service.ts';
export { createErc8004Service, type Erc8004Options } from './erc8004/erc8004.service.ts';
export {
  agentEventCtes,
  type EventMeta,
  type EventParts,
  eventCtes,
  recipientsOf,
} from './events/events.repository.ts';
export { createEventsService, type EventsService, publicEventId } from './events/events.service.ts';
export * from './idempotency/idempotency.service.ts';
export { createProcessors } from './jobs.ts';
export * from './keys/keys.model.ts';
export {
  type AuthenticateResult,
  createKeysService,
  type KeyPrincipal,
  type KeysService,
} from './keys/keys.service.ts';
export {
  createOrganizationsService,
  OrganizationExistsError,
  type OrganizationsService,
} from './organizations/organizations.service.ts';
export * from './sanctions/sanctions.model.ts';
export {
  BUNDLED_SANCTIONS_DIR,
  BUNDLED_SNAPSHOT_DATE,
  BUNDLED_SNAPSHOT_HASH,
  createSanctionsService,
  type ImportResult,
  readListDirectory,
  type SanctionsService,
  type SanctionsSource,
  type ScreeningResult,
  SnapshotRefusedError,
  sourceOf,
} from './sanctions/sanctions.service.ts';
export * from './scores/scores.model.ts';
export { type BatchEntry, createScoresService, type ScoresService } from './scores/scores.service.ts';
export { createScoringJobs, type ScoringJobs } from './scores/scoring-jobs.service.ts';
export { type CoreDeps, createServices, type Services } from './services.ts';
export { type Actor, DEFAULT_ORGANIZATION, systemActor } from './shared/actor.ts';
export { canonicalJson } from './shared/canonical-json.ts';
export { type Clock, systemClock, toUnixSeconds } from './shared/clock.ts';
export * from './shared/errors.ts';
export * from './shared/private-addresses.ts';
export { createTransactionsService, type TransactionsService } from './transactions/transactions.service.ts';
export { type ChainReader, createChainReader } from './verification/chain.ts';
export * from './verification/verification.model.ts';
export { createVerificationService, type VerificationService } from './verification/verification.service.ts';
export * from './webhooks/webhooks.model.ts';
export { createWebhooksService, type WebhooksService, type WebhooksSettings } from './webhooks/webhooks.service.ts';
