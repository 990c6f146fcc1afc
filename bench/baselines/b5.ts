import { randomUUID } from 'node:crypto';
import { blockingConnection, jobOptions, jobs } from '@vouch/jobs';
import { waitForOutput } from '@vouch/testkit';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import type { Context } from '../lib/context.ts';
import { REDIS_URL } from '../lib/infra.ts';
import { pacedJobRoundTrips } from '../lib/job-phases.ts';
import { spawnTs } from '../lib/procs.ts';
import { productSettings } from '../lib/profile.ts';

const QUEUE = 'b5';

/**
 * B5: a raw BullMQ round trip — `queue.add` → a no-op Worker in another process →
 * `job.waitUntilFinished(queueEvents)` — one at a time, paced at the P4 rate. The job
 * options are the product's (jobOptions of checks.verify) so only the work differs.
 */
export async function runB5(ctx: Context) {
  const proc = spawnTs(
    'b5-worker',
    'bench/baselines/b5-worker.ts',
    {
      REDIS_URL,
      BULLMQ_PREFIX: ctx.prefix,
      B5_QUEUE: QUEUE,
      WORKER_CONCURRENCY: String(productSettings.workerConcurrency),
    },
    ctx.logDir,
  );
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix: ctx.prefix });
  const events = new QueueEvents(QUEUE, { connection: blockingConnection(REDIS_URL), prefix: ctx.prefix });
  try {
    await waitForOutput(proc, 'b5 worker ready', 60_000);
    ctx.pids.b5worker = [proc.pid];
    await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
    const options = jobOptions(jobs.verify);
    const roundTrips = await pacedJobRoundTrips(ctx, 'B5', QUEUE, async (i) => {
      const job = await queue.add('noop', { i }, { ...options, jobId: `${QUEUE}-${randomUUID()}` });
      await job.waitUntilFinished(events, 10_000);
    });
    return {
      what: 'raw BullMQ round trip: add → no-op worker (own process) → waitUntilFinished, one at a time',
      ...roundTrips,
    };
  } finally {
    delete ctx.pids.b5worker;
    await events.close().catch(() => {});
    await queue.close().catch(() => {});
    connection.disconnect();
    await proc.stop();
  }
}
