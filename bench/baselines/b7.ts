import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Context } from '../lib/context.ts';
import { spawnTs } from '../lib/procs.ts';
import { productSettings } from '../lib/profile.ts';
import { median, round } from '../lib/stats.ts';

interface B7Out {
  agents: number;
  runsMs: number[];
  chunkedMs: number[];
  twoAtOnceMs: number[];
  chunkSize: number;
  rssBytes: number;
  cpu: Record<string, number>;
}

/** B7: runs bench/baselines/b7-recompute.ts in its own process and reads its timings. */
export async function runB7(ctx: Context) {
  const out = join(ctx.logDir, 'b7.json');
  const proc = spawnTs(
    'b7-recompute',
    'bench/baselines/b7-recompute.ts',
    {
      NODE_ENV: 'production',
      DATABASE_URL: ctx.dbUrl,
      DB_POOL_MAX: String(productSettings.dbPoolMax),
      B7_WARMUP: String(ctx.profile.recomputeWarmup),
      B7_REPS: String(ctx.profile.recomputeReps),
      B7_OUT: out,
      RECOMPUTE_CHUNK_SIZE: String(productSettings.recomputeChunkSize),
    },
    ctx.logDir,
  );
  ctx.pids.b7 = [proc.pid];
  const code = await proc.exited;
  delete ctx.pids.b7;
  if (code !== 0) throw new Error(`B7 exited with ${code ?? proc.child.signalCode}; its output:\n${proc.output()}`);
  const r = JSON.parse(readFileSync(out, 'utf8')) as B7Out;
  return {
    what: 'scores.allAddresses() + scores.recompute(all) in one process, no queue (one call)',
    agents: r.agents,
    warmupRuns: ctx.profile.recomputeWarmup,
    runsMs: r.runsMs.map((v) => round(v, 1)),
    medianMs: round(median(r.runsMs), 1),
    chunked: {
      what: `the same in sequential chunks of ${r.chunkSize} (what one worker with concurrency 1 would run)`,
      runsMs: r.chunkedMs.map((v) => round(v, 1)),
      medianMs: round(median(r.chunkedMs), 1),
    },
    chunkedTwoAtOnce: {
      what: `the same, two chunks at a time (two such workers, no queue); runs alternate with the sequential ones`,
      runsMs: r.twoAtOnceMs.map((v) => round(v, 1)),
      medianMs: round(median(r.twoAtOnceMs), 1),
      speedup: round(median(r.chunkedMs) / median(r.twoAtOnceMs), 2),
    },
    processRssMB: Math.round(r.rssBytes / 2 ** 20),
    /** Over the timed runs (score resets between them included), metered inside the B7 process. */
    cpu: r.cpu,
  };
}
