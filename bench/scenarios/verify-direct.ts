import { createServices } from '@vouch/core';
import { createDatabase } from '@vouch/db';
import { paced } from '../lib/closed-loop.ts';
import { type Context, withCpu } from '../lib/context.ts';
import { productSettings } from '../lib/profile.ts';

/**
 * Extra, for P4: the verification use case itself (what the worker's checks.verify job runs),
 * called in this process without HTTP or queue, paced like P4. P4 − this − B5 ≈ what HTTP and
 * the API's side of the queue add.
 */
export async function runVerifyDirect(ctx: Context) {
  const database = createDatabase({
    databaseUrl: ctx.dbUrl,
    poolMax: productSettings.dbPoolMax,
    applicationName: 'vouch-bench-verify',
  });
  try {
    const services = createServices({ db: database.db });
    const op = () => services.verification.verify(ctx.roles.verify);
    await op();
    const { profile } = ctx;
    if (profile.pacedWarmup) await paced({ ratePerSec: profile.pacedRate, count: profile.pacedWarmup, op });
    const { result, cpu } = await withCpu(ctx, () =>
      paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
    );
    if (result.errors) throw new Error(`verify: ${result.errors} errors, first: ${result.firstError}`);
    return {
      what: 'services.verification.verify(address) in the harness process: no HTTP, no queue; paced like P4',
      ratePerSec: profile.pacedRate,
      ...result,
      cpu,
    };
  } finally {
    await database.close();
  }
}
