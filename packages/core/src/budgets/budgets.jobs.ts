import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

/** Releases holds (and pending approvals) whose time has passed; scheduled by the runtime (HOLD_SWEEP_INTERVAL_MS). */
export const expireHoldsProcessor =
  (services: Services): Processor<typeof jobs.expireHolds> =>
  async () => {
    // Approvals first: a pending one's hold expires at the same time, in the same sweep. Holds
    // expire whatever became of the approvals' sweep: one failing (a busy database, a row it
    // cannot write) must not keep every budget's expired holds held; its error fails the job after.
    let failed: { error: unknown } | null = null;
    const approvals = await services.approvals.expireDue().catch((error: unknown) => {
      failed = { error };
      return [];
    });
    const holds = await services.authorizations.expireDue();
    if (failed !== null) throw (failed as { error: unknown }).error;
    return { expired: approvals.length + holds.length };
  };
