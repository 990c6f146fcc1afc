import { jobs, type Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** A recorded transaction against the chain; the last attempt stores what could not be checked. */
export const chainCheckProcessor =
  (services: Services): Processor<typeof jobs.chainCheck> =>
  (payload, ctx) =>
    services.chainChecks.check(payload.agent, payload.txHash, {
      lastAttempt: ctx.attempt >= jobs.chainCheck.options.attempts,
    });

/** Queues the checks that were lost or may now answer otherwise; scheduled by the runtime (TX_RECHECK_INTERVAL_MS). */
export const recheckTransactionsProcessor =
  (services: Services): Processor<typeof jobs.recheckTransactions> =>
  () =>
    services.chainChecks.recheck();
