import { systemActor } from '@vouch/core';
import { createDatabase } from '@vouch/db';
import type { Runtime } from '@vouch/runtime';
import { createTestRuntime } from '@vouch/testkit';
import { type Context, withCpu } from '../lib/context.ts';
import { productSettings } from '../lib/profile.ts';
import { LatencyRecorder } from '../lib/stats.ts';

/**
 * Extra, for P9: the spend use case itself (`services.budgets.spend`, what `POST
 * /api/budgets/:address/spend` runs), called in this process one at a time, calls alternating
 * between two runtimes over the run's database, alike but for EVENTS, each spending on a budget of
 * its own: what the event and its threshold bookkeeping add to one spend with no spend waiting on
 * its row. P9 measures the same under 50 connections on one hot budget, where that time is spent
 * inside the row lock. `on.latency` − `off.latency` at p50 is `addedMs`.
 */
export async function runSpendDirect(ctx: Context) {
  const database = createDatabase({
    databaseUrl: ctx.dbUrl,
    poolMax: productSettings.dbPoolMax,
    applicationName: 'vouch-bench-spend',
  });
  const runtimes: Runtime[] = [];
  try {
    const actor = systemActor();
    const huge = (10n ** 30n).toString();
    const sides = await Promise.all(
      (['on', 'off'] as const).map(async (events, i) => {
        const runtime = await createTestRuntime(database, { env: { EVENTS: events }, migrate: false });
        runtimes.push(runtime);
        // Two agents no other scenario uses (the roles take the first nine).
        const agent = ctx.agents[ctx.agents.length - 1 - i] as string;
        await runtime.services.budgets.set(actor, agent, { dailyLimit: huge, monthlyLimit: huge });
        return { events, runtime, agent, recorder: new LatencyRecorder() };
      }),
    );
    const spendOnce = async (side: (typeof sides)[number], record: boolean) => {
      const t0 = performance.now();
      await side.runtime.services.budgets.spend(actor, side.agent, { amount: '1' });
      if (record) side.recorder.record(performance.now() - t0);
    };
    const calls = ctx.profile.pacedCount * 10;
    for (let i = 0; i < calls / 4; i++) for (const side of sides) await spendOnce(side, false);
    const { cpu } = await withCpu(ctx, async () => {
      for (let i = 0; i < calls; i++) for (const side of sides) await spendOnce(side, true);
    });
    const [on, off] = sides.map((s) => s.recorder.summary());
    return {
      what: 'services.budgets.spend(1 wei) in the harness process, one at a time, alternating between a runtime with EVENTS=on (latency) and one with EVENTS=off (off.latency), each on a budget of its own',
      ops: on?.count,
      latency: on,
      off: { latency: off },
      addedMs: on && off ? Number((on.p50 - off.p50).toFixed(3)) : null,
      cpu,
    };
  } finally {
    for (const runtime of runtimes) await runtime.close();
    await database.close();
  }
}
