import type { Migration } from 'kysely';
import * as initial from './20261121000000-initial.ts';
import * as scoreEventJobs from './20261121010000-score-event-jobs.ts';
import * as cacheNotify from './20261121020000-cache-notify.ts';
import * as verificationFacts from './20261121030000-verification-facts.ts';
import * as cacheNotifyStatements from './20261122000000-cache-notify-statements.ts';
import * as verificationProvenance from './20261125000000-verification-provenance.ts';
import * as transactionBackdated from './20261125010000-transaction-backdated.ts';
import * as transactionChainStatus from './20261125020000-transaction-chain-status.ts';
import * as organizations from './20261126000000-organizations.ts';
import * as authorizations from './20261127000000-authorizations.ts';
import * as erc8004 from './20261127010000-erc8004.ts';
import * as events from './20261201000000-events.ts';
import * as transactionAsset from './20261202000000-transaction-asset.ts';
import * as verificationHeads from './20261203000000-verification-heads.ts';
import * as budgetAlerts from './20261204000000-budget-alerts.ts';
import * as eventsHorizonStable from './20261205000000-events-horizon-stable.ts';
import * as sanctionsNotifyCache from './20261206000000-sanctions-notify-cache.ts';
import * as webhookLastFailure from './20261207000000-webhook-last-failure.ts';
import * as webhookNotBefore from './20261208000000-webhook-not-before.ts';
import * as sanctionsRescore from './20261209000000-sanctions-rescore.ts';
import * as webhookPreviousSecrets from './20261210000000-webhook-previous-secrets.ts';
import * as anomalyChecksOrganization from './20261211000000-anomaly-checks-organization.ts';
import * as erc8004MintedTo from './20261212000000-erc8004-minted-to.ts';
import * as transactionsMovedToken from './20261213000000-transactions-moved-token.ts';
import * as ownerNotifyBudgets from './20261214000000-owner-notify-budgets.ts';
import * as anomalyChecksLatest from './20261215000000-anomaly-checks-latest.ts';
import * as anomalyChecksAsset from './20261216000000-anomaly-checks-asset.ts';
import * as decisionsOrganizationUnchecked from './20261217000000-decisions-organization-unchecked.ts';

/** Every migration, in order. Names are timestamped; never rename or reorder a landed one. */
export const migrations: Record<string, Migration> = {
  '20261121000000-initial': initial,
  '20261121010000-score-event-jobs': scoreEventJobs,
  '20261121020000-cache-notify': cacheNotify,
  '20261121030000-verification-facts': verificationFacts,
  '20261122000000-cache-notify-statements': cacheNotifyStatements,
  '20261125000000-verification-provenance': verificationProvenance,
  '20261125010000-transaction-backdated': transactionBackdated,
  '20261125020000-transaction-chain-status': transactionChainStatus,
  '20261126000000-organizations': organizations,
  '20261127000000-authorizations': authorizations,
  '20261127010000-erc8004': erc8004,
  '20261201000000-events': events,
  '20261202000000-transaction-asset': transactionAsset,
  '20261203000000-verification-heads': verificationHeads,
  '20261204000000-budget-alerts': budgetAlerts,
  '20261205000000-events-horizon-stable': eventsHorizonStable,
  '20261206000000-sanctions-notify-cache': sanctionsNotifyCache,
  '20261207000000-webhook-last-failure': webhookLastFailure,
  '20261208000000-webhook-not-before': webhookNotBefore,
  '20261209000000-sanctions-rescore': sanctionsRescore,
  '20261210000000-webhook-previous-secrets': webhookPreviousSecrets,
  '20261211000000-anomaly-checks-organization': anomalyChecksOrganization,
  '20261212000000-erc8004-minted-to': erc8004MintedTo,
  '20261213000000-transactions-moved-token': transactionsMovedToken,
  '20261214000000-owner-notify-budgets': ownerNotifyBudgets,
  '20261215000000-anomaly-checks-latest': anomalyChecksLatest,
  '20261216000000-anomaly-checks-asset': anomalyChecksAsset,
  '20261217000000-decisions-organization-unchecked': decisionsOrganizationUnchecked,
};
