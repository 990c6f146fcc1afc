import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** Releases holds (and pending approvals) whose time has passed; scheduled by the runtime (HOLD_SWEEP_INTERVAL_MS). */
export const expireHoldsProcessor =
  (services: Services): Processor<typeof jobs.expireHolds> =>
  async () => {
    // Approvals first: a pending one's hold expires at the same time, in the same sweep.
    const approvals = await services.approvals.expireDue();
    return { expired: approvals.length + (await services.authorizations.expireDue()).length };
  };
