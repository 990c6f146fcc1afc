import { type Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { paced, warmUpPaced } from './closed-loop.ts';
import { type Context, withCpu } from './context.ts';
import { REDIS_URL } from './infra.ts';
import { round } from './stats.ts';

/** Wall-clock milliseconds with sub-ms precision: the clock of BullMQ's `Date.now()` timestamps. */
export const wallClock = () => performance.timeOrigin + performance.now();

/** When the harness sent one request and when its answer arrived (`wallClock`). */
export interface Span {
  start: number;
  end: number;
}

const PHASES = {
  toQueued: 'request sent → job created by the producer (for P4: the HTTP request and the API before its add)',
  queuedToStarted: 'job created → worker asks Redis for it (the add, the worker woken by the queue marker)',
  running: 'worker asks for the job → worker reports it done (moveToActive, BullMQ’s own steps, the processor)',
  finishedToAnswer:
    'worker reports it done → answer received (moveToFinished, completion event; for P4 the HTTP answer)',
} as const;

type Phase = keyof typeof PHASES;

export type JobPhases = Record<Phase, { what: string; mean: number }> & { jobs: number };

/**
 * Where the time of one-at-a-time queued round trips (B5, P4) went, from the timestamps
 * BullMQ keeps on each job — `timestamp` set by the producer when it creates the job,
 * `processedOn` by the worker when it sends moveToActive, `finishedOn` when it sends
 * moveToFinished — and the harness's own send and receive
 * times. Jobs are matched to spans in order (one request at a time, each finished before
 * the next). BullMQ's timestamps are whole milliseconds (`Date.now()`, truncated), so half a
 * millisecond is added to each before it is compared with the harness's fractional clock;
 * a single phase is only good to about a millisecond (so no percentiles are given), the mean
 * over hundreds of requests to a few hundredths. The four means add up to the mean round trip.
 */
export async function jobPhases(prefix: string, queueName: string, spans: Span[]): Promise<JobPhases> {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const queue = new Queue(queueName, { connection, prefix });
  let jobs: Job[];
  try {
    jobs = (await queue.getJobs(['completed'], 0, -1)).filter((j) => j.processedOn && j.finishedOn);
  } finally {
    await queue.close();
    connection.disconnect();
  }
  jobs.sort((a, b) => a.timestamp - b.timestamp);
  const mine = jobs.slice(-spans.length);
  if (mine.length !== spans.length) {
    throw new Error(`${queueName}: ${spans.length} requests but ${mine.length} completed jobs kept to time them`);
  }
  const values: Record<Phase, number[]> = { toQueued: [], queuedToStarted: [], running: [], finishedToAnswer: [] };
  mine.forEach((job, i) => {
    const span = spans[i] as Span;
    const created = job.timestamp + 0.5;
    const started = (job.processedOn as number) + 0.5;
    const finished = (job.finishedOn as number) + 0.5;
    if (created < span.start - 1 || finished > span.end + 1) {
      throw new Error(`${queueName}: job ${job.id} does not fall within request ${i} (matched out of order)`);
    }
    values.toQueued.push(created - span.start);
    values.queuedToStarted.push(started - created);
    values.running.push(finished - started);
    values.finishedToAnswer.push(span.end - finished);
  });
  const summary = (phase: Phase) => ({
    what: PHASES[phase],
    mean: round(values[phase].reduce((sum, v) => sum + v, 0) / values[phase].length),
  });
  return {
    jobs: mine.length,
    toQueued: summary('toQueued'),
    queuedToStarted: summary('queuedToStarted'),
    running: summary('running'),
    finishedToAnswer: summary('finishedToAnswer'),
  };
}

/**
 * Round trips through the queue `queueName`, one at a time, evenly paced at the profile's rate
 * after the paced warm-up (B5, P4): each `send` is timed on the wall clock, and `phases` splits
 * the mean round trip with BullMQ's timestamps of the jobs (`jobPhases`). A send that throws is
 * an error of the scenario `label`.
 */
export async function pacedJobRoundTrips(
  ctx: Context,
  label: string,
  queueName: string,
  send: (i: number) => Promise<void>,
) {
  const spans: Span[] = [];
  const op = async (i: number) => {
    const start = wallClock();
    await send(i);
    spans.push({ start, end: wallClock() });
  };
  const { profile } = ctx;
  await warmUpPaced(profile, op);
  spans.length = 0;
  const { result, cpu } = await withCpu(ctx, () =>
    paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
  );
  if (result.errors) throw new Error(`${label}: ${result.errors} errors, first: ${result.firstError}`);
  return {
    phases: await jobPhases(ctx.prefix, queueName, spans).catch((error: Error) => ({ error: error.message })),
    ratePerSec: profile.pacedRate,
    burstWarmup: profile.burstWarmup,
    warmupCount: profile.pacedWarmup,
    ...result,
    cpu,
  };
}
