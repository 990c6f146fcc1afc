import { sql } from '@vouch/db';
import { resetScores, sleep } from '@vouch/testkit';
import { type Context, call, type RunningApi, withCpu } from '../lib/context.ts';
import { median, round } from '../lib/stats.ts';

interface RecomputeResult {
  agents: number;
  chunks: number;
  updated: number;
  unchanged: number;
  workers: string[];
}

/** One end-to-end recomputation: POST /api/scores/recompute {all:true} until its result (polling on a 202). */
async function recomputeOnce(ctx: Context, api: RunningApi) {
  await resetScores(ctx.database.db, { vacuum: true });
  const t0 = performance.now();
  const answer = await call<{ data: RecomputeResult & { jobId?: string } }>(
    api.base,
    'POST',
    '/api/scores/recompute',
    { all: true },
    [200, 202],
  );
  let result: RecomputeResult;
  let polled = false;
  if (answer.status === 202) {
    polled = true;
    const jobId = answer.body.data.jobId;
    for (;;) {
      const job = await call<{ data: { status: string; result: RecomputeResult; error: unknown } }>(
        api.base,
        'GET',
        `/api/jobs/${jobId}`,
      );
      if (job.body.data.status === 'completed') {
        result = job.body.data.result;
        break;
      }
      if (job.body.data.status === 'failed')
        throw new Error(`recompute job failed: ${JSON.stringify(job.body.data.error)}`);
      await sleep(20);
    }
  } else {
    result = answer.body.data;
  }
  const ms = performance.now() - t0;
  const expected = ctx.agents.length;
  if (result.agents !== expected || result.updated !== expected) {
    throw new Error(`recompute covered ${result.agents} agents and updated ${result.updated}; expected ${expected}`);
  }
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM agents WHERE score = 0`.execute(
    ctx.database.db,
  );
  if ((rows[0]?.n ?? 1) !== 0) throw new Error(`${rows[0]?.n} agents still score 0 after the recomputation`);
  return { ms, result, polled };
}

/** P5 / P6: warm-up runs, then timed runs (median), with whatever worker processes are running. */
export async function runRecompute(
  ctx: Context,
  api: RunningApi,
  workerProcesses: number,
  warmupRuns = ctx.profile.recomputeWarmup,
) {
  for (let i = 0; i < warmupRuns; i++) await recomputeOnce(ctx, api);
  const runs: Awaited<ReturnType<typeof recomputeOnce>>[] = [];
  const started = performance.now();
  const { cpu } = await withCpu(ctx, async () => {
    for (let i = 0; i < ctx.profile.recomputeReps; i++) runs.push(await recomputeOnce(ctx, api));
  });
  const last = runs[runs.length - 1] as (typeof runs)[number];
  return {
    what: `POST /api/scores/recompute {"all":true} until its result, ${workerProcesses} worker process(es)`,
    agents: ctx.agents.length,
    workerProcesses,
    warmupRuns,
    runsMs: runs.map((r) => round(r.ms, 1)),
    medianMs: round(median(runs.map((r) => r.ms)), 1),
    answeredBy: runs.some((r) => r.polled) ? '202 + polling GET /api/jobs/:id' : '200 (JOB_WAIT_TIMEOUT_MS=600000)',
    chunks: last.result.chunks,
    workersSeen: last.result.workers,
    /** Seconds the CPU meter ran (resets included): weighs this series' `cpu` when series are joined. */
    meteredSec: round((performance.now() - started) / 1000, 2),
    cpu,
  };
}

type Series = Awaited<ReturnType<typeof runRecompute>>;

/**
 * P5 is measured in two halves, before and after P6, so that P6 sits between them: a drift
 * of the machine or of the tables over that minute (later runs were up to 15 % faster than
 * earlier ones of the same setup) weighs on both sides of P6's ratio alike. The median and
 * the CPU figures are over both halves.
 */
export function joinHalves(before: Series, after: Series) {
  const runsMs = [...before.runsMs, ...after.runsMs];
  const meteredSec = before.meteredSec + after.meteredSec;
  const cpu: Record<string, number> = {};
  for (const key of new Set([...Object.keys(before.cpu), ...Object.keys(after.cpu)])) {
    const weighted = (before.cpu[key] ?? 0) * before.meteredSec + (after.cpu[key] ?? 0) * after.meteredSec;
    cpu[key] = round(weighted / meteredSec, 2);
  }
  const half = (s: Series) => ({ runsMs: s.runsMs, medianMs: s.medianMs, cpu: s.cpu });
  return {
    ...after,
    warmupRuns: before.warmupRuns + after.warmupRuns,
    runsMs,
    medianMs: round(median(runsMs), 1),
    halves: { beforeP6: half(before), afterP6: half(after) },
    meteredSec: round(meteredSec, 2),
    cpu,
  };
}
