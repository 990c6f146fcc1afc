import { sql } from '@vouch/db';
import { type Context, call, type RunningApi, withCpu } from '../lib/context.ts';
import { sleep } from '../lib/procs.ts';
import { resetScores } from '../lib/recompute.ts';
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
  await resetScores(ctx.database.db);
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
export async function runRecompute(ctx: Context, api: RunningApi, workerProcesses: number) {
  for (let i = 0; i < ctx.profile.recomputeWarmup; i++) await recomputeOnce(ctx, api);
  const runs: Awaited<ReturnType<typeof recomputeOnce>>[] = [];
  const { cpu } = await withCpu(ctx, async () => {
    for (let i = 0; i < ctx.profile.recomputeReps; i++) runs.push(await recomputeOnce(ctx, api));
  });
  const last = runs[runs.length - 1] as (typeof runs)[number];
  return {
    what: `POST /api/scores/recompute {"all":true} until its result, ${workerProcesses} worker process(es)`,
    agents: ctx.agents.length,
    workerProcesses,
    warmupRuns: ctx.profile.recomputeWarmup,
    runsMs: runs.map((r) => round(r.ms, 1)),
    medianMs: round(median(runs.map((r) => r.ms)), 1),
    answeredBy: runs.some((r) => r.polled) ? '202 + polling GET /api/jobs/:id' : '200 (JOB_WAIT_TIMEOUT_MS=600000)',
    chunks: last.result.chunks,
    workersSeen: last.result.workers,
    cpu,
  };
}
