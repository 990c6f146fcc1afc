import type { Profile } from './profile.ts';
import { LatencyRecorder, type LatencySummary, round } from './stats.ts';

export interface ClosedLoopOptions {
  /** Operations in flight at once (each loop starts its next one when the last ends). */
  concurrency: number;
  durationSec: number;
  warmupSec?: number;
  /** One operation; `loop` is the index of the loop running it. */
  op: (loop: number) => Promise<unknown>;
}

export interface ClosedLoopResult {
  concurrency: number;
  elapsedSec: number;
  ops: number;
  errors: number;
  firstError: string | null;
  opsPerSec: number;
  latency: LatencySummary;
}

async function phase(options: ClosedLoopOptions, seconds: number, recorder: LatencyRecorder | null) {
  const end = performance.now() + seconds * 1000;
  let ops = 0;
  let errors = 0;
  let firstError: string | null = null;
  const started = performance.now();
  const loops = Array.from({ length: options.concurrency }, async (_, loop) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await options.op(loop);
        recorder?.record(performance.now() - t0);
        ops++;
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
    }
  });
  await Promise.all(loops);
  return { ops, errors, firstError, elapsedSec: (performance.now() - started) / 1000 };
}

/** A closed-loop load driver for anything async (a pg query, a BullMQ round trip). */
export async function closedLoop(options: ClosedLoopOptions): Promise<ClosedLoopResult> {
  if (options.warmupSec) await phase(options, options.warmupSec, null);
  const recorder = new LatencyRecorder();
  const r = await phase(options, options.durationSec, recorder);
  return {
    concurrency: options.concurrency,
    elapsedSec: round(r.elapsedSec),
    ops: r.ops,
    errors: r.errors,
    firstError: r.firstError,
    opsPerSec: round(r.ops / r.elapsedSec, 1),
    latency: recorder.summary(),
  };
}

/**
 * Paced, one at a time: operation i starts at `i / ratePerSec` seconds (or as soon as
 * the previous one ends, if it ran late). Latency of each operation, ms.
 */
export async function paced(options: {
  ratePerSec: number;
  count: number;
  warmupCount?: number;
  op: (i: number) => Promise<unknown>;
}): Promise<{ ops: number; errors: number; firstError: string | null; elapsedSec: number; latency: LatencySummary }> {
  const run = async (count: number, recorder: LatencyRecorder | null) => {
    const interval = 1000 / options.ratePerSec;
    const start = performance.now();
    let errors = 0;
    let firstError: string | null = null;
    for (let i = 0; i < count; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const t0 = performance.now();
      try {
        await options.op(i);
        recorder?.record(performance.now() - t0);
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
    }
    return { errors, firstError, elapsedSec: (performance.now() - start) / 1000 };
  };
  if (options.warmupCount) await run(options.warmupCount, null);
  const recorder = new LatencyRecorder();
  const r = await run(options.count, recorder);
  return { ops: recorder.count, ...r, elapsedSec: round(r.elapsedSec), latency: recorder.summary() };
}

/**
 * The warm-up of a paced scenario (B5, P4 and the X- scenarios paced like them):
 * `profile.burstWarmup` operations back to back, then `profile.pacedWarmup` at the
 * scenario's pace. Paced at 20 a second, the code under test stays cold through a short
 * warm-up (figures with and without, `BENCH_BURST_WARMUP=0`, in bench/README.md).
 * A warm-up operation that fails ends the scenario.
 */
export async function warmUpPaced(
  profile: Pick<Profile, 'burstWarmup' | 'pacedWarmup' | 'pacedRate'>,
  op: (i: number) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < profile.burstWarmup; i++) await op(i);
  if (profile.pacedWarmup) {
    const r = await paced({ ratePerSec: profile.pacedRate, count: profile.pacedWarmup, op });
    if (r.errors) throw new Error(`warm-up: ${r.errors} errors, first: ${r.firstError}`);
  }
}
