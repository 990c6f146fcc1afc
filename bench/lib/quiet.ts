import { sleep } from '@vouch/testkit';
import type { Context } from './context.ts';
import { cpuMeter } from './cpu.ts';

/** CPU used by processes that are not part of the run (plus steal), above which a measurement counts as disturbed. */
export const NOISE_CORES = 0.25;

/**
 * This machine may be shared (other test runs, builds). Before a scenario, waits until the
 * processes that are not part of the run use less than NOISE_CORES, drawing on a budget of
 * waiting for the whole run; returns what it saw. The scenario still runs when the budget is spent.
 */
export async function waitForQuiet(ctx: Context, budget: { remainingMs: number }, sampleMs = 500) {
  let waitedMs = 0;
  for (;;) {
    const meter = cpuMeter(() => ctx.pids);
    await sleep(sampleMs);
    const usage = meter.stop();
    const other = Math.round(((usage.other ?? 0) + (usage.steal ?? 0)) * 100) / 100;
    if (other <= NOISE_CORES || budget.remainingMs <= 0) {
      return { otherCoresBefore: other, waitedSec: Math.round(waitedMs / 100) / 10 };
    }
    waitedMs += sampleMs;
    budget.remainingMs -= sampleMs;
  }
}
