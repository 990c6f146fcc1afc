import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** Drops idempotency keys past their 24 h; scheduled by the runtime (IDEMPOTENCY_PURGE_INTERVAL_MS). */
export const purgeIdempotencyProcessor =
  (services: Services): Processor<typeof jobs.purgeIdempotency> =>
  async () => ({ purged: await services.idempotency.purgeExpired() });
