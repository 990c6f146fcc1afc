import { createServices } from '@vouch/core';
import { createDatabase } from '@vouch/db';
import { paced } from '../lib/closed-loop.ts';
import { type Context, withCpu } from '../lib/context.ts';
import { productSettings } from '../lib/profile.ts';
import { LatencyRecorder } from '../lib/stats.ts';

/**
 * Extra, for P4: the verification use case itself (what the worker's checks.verify job runs),
 * called in this process without HTTP or queue, paced like P4. P4 − this − B5 ≈ what HTTP and
 * the API's side of the queue add. Calls alternate between two connection pools, one with the
 * product's prepared statements and one with DB_PREPARED_STATEMENTS=off (every statement parsed
 * and planned on each call), so the two are compared at the same moments of the same run.
 * `latency` is the product's (prepared); `unprepared.latency` the other.
 */
export async function runVerifyDirect(ctx: Context) {
  const open = (prepared: boolean) => {
    const database = createDatabase({
      databaseUrl: ctx.dbUrl,
      poolMax: productSettings.dbPoolMax,
      applicationName: 'vouch-bench-verify',
      preparedStatements: prepared,
    });
    return { database, verify: createServices({ db: database.db }).verification.verify };
  };
  const variants = [open(true), open(false)] as const;
  try {
    let recorders = [new LatencyRecorder(), new LatencyRecorder()] as const;
    const op = async (i: number) => {
      const variant = variants[i % 2] as (typeof variants)[number];
      const t0 = performance.now();
      await variant.verify(ctx.roles.verify);
      recorders[i % 2]?.record(performance.now() - t0);
    };
    await op(0);
    await op(1);
    const { profile } = ctx;
    if (profile.pacedWarmup) await paced({ ratePerSec: profile.pacedRate, count: profile.pacedWarmup, op });
    recorders = [new LatencyRecorder(), new LatencyRecorder()];
    const { result, cpu } = await withCpu(ctx, () =>
      paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
    );
    if (result.errors) throw new Error(`verify: ${result.errors} errors, first: ${result.firstError}`);
    return {
      what: 'services.verification.verify(address) in the harness process: no HTTP, no queue; paced like P4, calls alternating between prepared statements on (latency) and off (unprepared)',
      ratePerSec: profile.pacedRate,
      ...result,
      ops: recorders[0].count,
      latency: recorders[0].summary(),
      unprepared: { ops: recorders[1].count, latency: recorders[1].summary() },
      cpu,
    };
  } finally {
    await Promise.all(variants.map((v) => v.database.close()));
  }
}
