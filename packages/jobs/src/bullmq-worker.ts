import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { blockingConnection } from './bullmq.ts';
import { DEPENDENCY_UNAVAILABLE, encodeJobError } from './errors.ts';
import type { Executor } from './executor.ts';
import { jobsByName, jobsOfQueue, type QueueName } from './registry.ts';

export interface BullmqWorkersOptions {
  redisUrl: string;
  prefix: string;
  queues: readonly QueueName[];
  concurrency: Readonly<Record<QueueName, number>>;
  execute: Executor;
  logger: Logger;
  /** How long a job's lock lasts; a killed worker's jobs are taken again after it (stalled). */
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** Names the workers' Redis connections (`<prefix>:<queue>:w:<name>`), so CLIENT LIST tells whose they are. */
  name?: string;
}

/** Redis refuses a client name with spaces or characters outside printable ASCII. */
export function redisClientName(name: string): string {
  return name.replace(/[^!-~]/g, '-').slice(0, 200);
}

/**
 * One BullMQ Worker per queue, carrying out the shared executor's decision: a refusal fails the
 * job for good, an unavailable database puts it back to delayed without spending an attempt, any
 * other error is re-thrown so that BullMQ retries it with the registry's attempts and backoff.
 */
export function startBullmqWorkers(options: BullmqWorkersOptions) {
  const workers = options.queues.map((queue) => {
    const worker = new Worker(
      queue,
      async (job: Job, token?: string) => {
        const def = jobsByName.get(job.name);
        if (!def || def.queue !== queue) throw new UnrecoverableError(`no job ${job.name} on queue ${queue}`);
        const log = options.logger.child({ jobId: job.id, jobName: job.name });
        const started = Date.now();
        const outcome = await options.execute({
          job: def,
          data: job.data,
          attempt: job.attemptsMade + 1,
          queuedAt: job.timestamp,
          context: {
            jobId: job.id as string,
            updateProgress: (progress: number) => job.updateProgress(progress),
            childrenValues: async () => Object.values(await job.getChildrenValues()),
          },
        });
        switch (outcome.kind) {
          case 'completed':
            log.debug({ ms: Date.now() - started }, 'job completed');
            return outcome.result;
          case 'refused':
            log.info({ code: outcome.error.code }, 'job refused');
            throw new UnrecoverableError(encodeJobError(outcome.error));
          case 'later':
            // The job's own schedule (RunAgainLater): back to delayed, no attempt spent.
            if (token) {
              log.debug({ reason: outcome.reason, retryInMs: outcome.delayMs }, 'job runs again later');
              await job.moveToDelayed(Date.now() + outcome.delayMs, token);
              throw new DelayedError();
            }
            throw new Error(outcome.reason);
          case 'unavailable':
            if (token) {
              log.warn({ err: outcome.cause, retryInMs: outcome.delayMs }, 'database unavailable; job retried shortly');
              await job.moveToDelayed(Date.now() + outcome.delayMs, token);
              throw new DelayedError();
            }
            throw outcome.cause;
          default:
            log.warn({ err: outcome.cause, attempt: job.attemptsMade + 1 }, 'job failed');
            // As the in-process runner's waiting caller gets the error itself (a 503), the
            // producer must tell a dependency that was away or busy from a job that is wrong.
            if (outcome.kind === 'failed' && outcome.dependency) {
              throw new Error(encodeJobError(DEPENDENCY_UNAVAILABLE));
            }
            throw outcome.cause;
        }
      },
      {
        connection: blockingConnection(options.redisUrl),
        prefix: options.prefix,
        concurrency: options.concurrency[queue],
        lockDuration: options.lockDurationMs,
        stalledInterval: options.stalledIntervalMs,
        maxStalledCount: 2,
        ...(options.name && { name: redisClientName(options.name) }),
      },
    );
    worker.on('error', (err) => options.logger.warn({ err, queue }, 'worker connection error'));
    return worker;
  });
  options.logger.info(
    { queues: options.queues, jobs: options.queues.flatMap((q) => jobsOfQueue(q).map((j) => j.name)) },
    'workers started',
  );

  /**
   * Cuts a worker's command connection as closed, not merely disconnected. A job that ends after
   * a plain disconnect (or whose end was being recorded when it came) has BullMQ 5 record that end
   * on the dead connection, fail with "Connection is closed", and try again at once for as long as
   * the worker is closing: a loop of promises that never lets a timer or an I/O callback run, so
   * the process spins and never exits. BullMQ records nothing on a connection marked closing, and
   * only its own close marks it; `Worker.close(true)` cannot, once a graceful close has begun. The
   * job stays active and another worker takes it again once its lock lapses (stalled).
   */
  function cut(worker: Worker): Promise<void> {
    const own = worker as unknown as { connection: { close(force: boolean): Promise<void> } };
    return own.connection.close(true);
  }

  let closing: Promise<void> | undefined;
  /** Stops taking jobs, lets active ones finish until the deadline, then cuts the connections. */
  async function close(deadlineMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const graceful = Promise.all(workers.map((w) => w.close())).then(() => 'closed' as const);
    graceful.catch(() => {}); // a close cut short by the disconnect below is not an unhandled rejection
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    });
    const outcome = await Promise.race([graceful, deadline]);
    clearTimeout(timer);
    if (outcome === 'deadline') {
      // close(true) on a worker already closing only waits for that close: its connections
      // are cut instead, and the jobs still running are taken again by another worker once
      // their locks lapse (stalled).
      options.logger.warn({ deadlineMs }, 'workers did not finish before the deadline; disconnecting');
      await Promise.allSettled(workers.map(cut));
    }
  }

  return {
    workers,
    /** As `close` above; a second call (the runtime's, after the signal's) gets the first one's end. */
    close(deadlineMs: number): Promise<void> {
      closing ??= close(deadlineMs);
      return closing;
    },
  };
}

export type BullmqWorkers = ReturnType<typeof startBullmqWorkers>;
