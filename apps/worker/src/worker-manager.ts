import { isDatabaseUnavailable } from '@vouch/db';
import {
  blockingConnection,
  DomainJobError,
  encodeJobError,
  jobsByName,
  jobsOfQueue,
  type Processors,
  type QueueName,
} from '@vouch/jobs';
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Logger } from 'pino';

export interface WorkerManagerOptions {
  redisUrl: string;
  prefix?: string;
  queues: readonly QueueName[];
  concurrency: (queue: QueueName) => number;
  processors: Processors;
  logger: Logger;
  /** How long a job's lock lasts; a killed worker's jobs are retried after it (stalled). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

/** While the database is unavailable, a job is tried again this often, without spending an attempt… */
export const UNAVAILABLE_RETRY_MS = 1000;
/** …for at most this long after it was queued; then its attempts and backoff take over. */
export const UNAVAILABLE_RETRY_FOR_MS = 10 * 60_000;

/** Refuses a processor set that misses a registered job or has one the registry does not know. */
export function verifyProcessors(processors: Processors): void {
  const missing = [...jobsByName.keys()].filter(
    (name) => typeof (processors as Record<string, unknown>)[name] !== 'function',
  );
  const unknown = Object.keys(processors).filter((name) => !jobsByName.has(name));
  if (missing.length || unknown.length) {
    throw new Error(
      `job processors do not match the registry: missing [${missing.join(', ')}], unknown [${unknown.join(', ')}]`,
    );
  }
}

/** One BullMQ Worker per queue, running the registry's processors. */
export function startWorkers(options: WorkerManagerOptions) {
  verifyProcessors(options.processors);
  const workers = options.queues.map((queue) => {
    const worker = new Worker(
      queue,
      async (job: Job, token?: string) => {
        const def = jobsByName.get(job.name);
        if (!def || def.queue !== queue) throw new UnrecoverableError(`no job ${job.name} on queue ${queue}`);
        const log = options.logger.child({ jobId: job.id, jobName: job.name });
        const started = Date.now();
        const processor = options.processors[def.name] as (p: unknown, c: unknown) => Promise<unknown>;
        try {
          const result = await processor(def.payload.parse(job.data), {
            jobId: job.id as string,
            attempt: job.attemptsMade + 1,
            updateProgress: (progress: number) => job.updateProgress(progress),
            childrenValues: async () => Object.values(await job.getChildrenValues()),
          });
          log.debug({ ms: Date.now() - started }, 'job completed');
          return def.result.parse(result);
        } catch (error) {
          if (error instanceof DomainJobError) {
            log.info({ code: error.encoded.code }, 'job refused');
            throw new UnrecoverableError(encodeJobError(error.encoded));
          }
          // A database that is restarting or failing over is not the job's fault: spending its
          // attempts (three, 1 s and 2 s apart) would fail an accepted job during a short outage.
          // It goes back to delayed and runs again once the database answers.
          if (isDatabaseUnavailable(error) && token && Date.now() - job.timestamp < UNAVAILABLE_RETRY_FOR_MS) {
            log.warn({ err: error, retryInMs: UNAVAILABLE_RETRY_MS }, 'database unavailable; job retried shortly');
            await job.moveToDelayed(Date.now() + UNAVAILABLE_RETRY_MS, token);
            throw new DelayedError();
          }
          log.warn({ err: error, attempt: job.attemptsMade + 1 }, 'job failed');
          throw error;
        }
      },
      {
        connection: blockingConnection(options.redisUrl),
        prefix: options.prefix ?? 'vouch',
        concurrency: options.concurrency(queue),
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 30_000,
        maxStalledCount: 2,
      },
    );
    worker.on('error', (err) => options.logger.warn({ err, queue }, 'worker connection error'));
    return worker;
  });
  options.logger.info(
    { queues: options.queues, jobs: options.queues.flatMap((q) => jobsOfQueue(q).map((j) => j.name)) },
    'workers started',
  );

  return {
    workers,
    /** Stops taking jobs, lets active ones finish until the deadline, then closes hard. */
    async close(deadlineMs: number): Promise<void> {
      let timer: NodeJS.Timeout | undefined;
      const graceful = Promise.all(workers.map((w) => w.close())).then(() => 'closed' as const);
      const deadline = new Promise<'deadline'>((resolve) => {
        timer = setTimeout(() => resolve('deadline'), deadlineMs);
      });
      const outcome = await Promise.race([graceful, deadline]);
      clearTimeout(timer);
      if (outcome === 'deadline') {
        options.logger.warn({ deadlineMs }, 'workers did not finish before the deadline; closing hard');
        await Promise.allSettled(workers.map((w) => w.close(true)));
      }
    },
  };
}

export type WorkerManager = ReturnType<typeof startWorkers>;
