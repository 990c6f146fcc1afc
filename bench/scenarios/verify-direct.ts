import { createDatabase } from '@vouch/db';
import { createTestRuntime } from '@vouch/testkit';
import { paced, warmUpPaced } from '../lib/closed-loop.ts';
import { type Context, withCpu } from '../lib/context.ts';
import { productSettings } from '../lib/profile.ts';
import { LatencyRecorder } from '../lib/stats.ts';

/**
 * Extra, for P4: the verification use case itself (what the worker's checks.verify job runs),
 * called in this process without HTTP or queue, paced like P4. P4 − this − B5 ≈ what HTTP and
 * the API's side of the queue add. Calls alternate between two connection pools, one with the
 * product's prepared statements and one with DB_PREPARED_STATEMENTS=off (every statement parsed
 * and planned on each call), so the two are compared at the same moments of the same run.
 * `latency` is the product's (prepared); `unprepared.latency` the other. Every third call is a
 * first verification (`first.latency`): a service created just before it, with nothing
 * remembered, reads the facts and then stores (two statements); the other calls verify an
 * address their service verified before (one statement, docs/checks.md).
 */
export async function runVerifyDirect(ctx: Context) {
  // The product's services over a pool of the harness's, wired by the product's composition root.
  const servicesOver = async (database: ReturnType<typeof createDatabase>) =>
    (await createTestRuntime(database, { migrate: false, loadSanctions: false })).services;
  const open = async (prepared: boolean) => {
    const database = createDatabase({
      databaseUrl: ctx.dbUrl,
      poolMax: productSettings.dbPoolMax,
      applicationName: 'vouch-bench-verify',
      preparedStatements: prepared,
    });
    return { database, verify: (await servicesOver(database)).verification.verify };
  };
  const variants = [await open(true), await open(false)] as const;
  const [prepared] = variants;
  // A verification service with nothing remembered, on the prepared pool (made before the clock starts).
  const firstTime = async () => (await servicesOver(prepared.database)).verification.verify;
  try {
    const recorders = () => [new LatencyRecorder(), new LatencyRecorder(), new LatencyRecorder()] as const;
    let recorded = recorders();
    const op = async (i: number) => {
      const verify = i % 3 === 2 ? await firstTime() : (variants[i % 3] as (typeof variants)[number]).verify;
      const t0 = performance.now();
      await verify(ctx.roles.verify);
      recorded[i % 3]?.record(performance.now() - t0);
    };
    await op(0);
    await op(1);
    await op(2);
    const { profile } = ctx;
    await warmUpPaced(profile, op);
    recorded = recorders();
    const { result, cpu } = await withCpu(ctx, () =>
      // Three variants: each gets as many calls as each of two had (half the paced count).
      paced({ ratePerSec: profile.pacedRate, count: Math.round(profile.pacedCount * 1.5), op }),
    );
    if (result.errors) throw new Error(`verify: ${result.errors} errors, first: ${result.firstError}`);
    return {
      what: 'services.verification.verify(address) in the harness process: no HTTP, no queue; paced like P4, calls alternating between a repeat verification with prepared statements on (latency) and off (unprepared), and a first verification (first: nothing remembered, read then store)',
      ratePerSec: profile.pacedRate,
      ...result,
      ops: recorded[0].count,
      latency: recorded[0].summary(),
      unprepared: { ops: recorded[1].count, latency: recorded[1].summary() },
      first: { ops: recorded[2].count, latency: recorded[2].summary() },
      cpu,
    };
  } finally {
    await Promise.all(variants.map((v) => v.database.close()));
  }
}
