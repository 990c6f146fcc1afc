import { DomainJobError, type Processors } from '@vouch/jobs';
import { expireHoldsProcessor } from './budgets/budgets.jobs.ts';
import { anomalyProcessor, sanctionsProcessor, verifyProcessor } from './checks/checks.jobs.ts';
import { erc8004IndexProcessor } from './erc8004/erc8004.jobs.ts';
import { purgeIdempotencyProcessor } from './idempotency/idempotency.jobs.ts';
import {
  batchScoresProcessor,
  recomputeChunkProcessor,
  recomputeProcessor,
  refreshAgentProcessor,
} from './scores/scores.jobs.ts';
import type { Services } from './services.ts';
import { DomainError } from './shared/errors.ts';
import { chainCheckProcessor, recheckTransactionsProcessor } from './transactions/transactions.jobs.ts';
import {
  deliverWebhookProcessor,
  dispatchEventsProcessor,
  purgeEventsProcessor,
  sweepWebhooksProcessor,
} from './webhooks/webhooks.jobs.ts';

/** Carries a domain refusal across the queue as a permanent, decodable failure. */
function domainErrors<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (error) {
      if (error instanceof DomainError) {
        throw new DomainJobError({ code: error.code, message: error.message, details: error.details });
      }
      throw error;
    }
  };
}

/**
 * Every job's processor, keyed by job name; the same set runs in BullMQ workers and in the
 * in-process runner. `worker` names this process in recomputation results.
 */
export function createProcessors(services: Services, worker: string): Processors {
  const processors: Processors = {
    'scores.batch': batchScoresProcessor(services),
    'scores.recompute': recomputeProcessor(),
    'scores.recompute-chunk': recomputeChunkProcessor(services, worker),
    'scores.refresh-agent': refreshAgentProcessor(services, worker),
    'checks.verify': verifyProcessor(services),
    'checks.sanctions': sanctionsProcessor(services),
    'checks.anomaly': anomalyProcessor(services),
    'checks.transaction': chainCheckProcessor(services),
    'maintenance.purge-idempotency': purgeIdempotencyProcessor(services),
    'maintenance.expire-holds': expireHoldsProcessor(services),
    'maintenance.recheck-transactions': recheckTransactionsProcessor(services),
    'maintenance.erc8004-index': erc8004IndexProcessor(services),
    'maintenance.purge-events': purgeEventsProcessor(services),
    'webhooks.dispatch': dispatchEventsProcessor(services),
    'webhooks.deliver': deliverWebhookProcessor(services),
    'webhooks.sweep': sweepWebhooksProcessor(services),
  };
  return Object.fromEntries(
    Object.entries(processors).map(([name, fn]) => [name, domainErrors(fn as (...a: unknown[]) => Promise<unknown>)]),
  ) as unknown as Processors;
}
