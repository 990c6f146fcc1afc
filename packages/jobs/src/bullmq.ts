import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import {
  type ConnectionOptions,
  FlowProducer,
  Job,
  type JobsOptions,
  Queue,
  QueueEvents,
  RedisConnection,
} from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import {
  DomainJobError,
  decodeJobError,
  type EncodedJobError,
  JobFailedError,
  JobsUnavailableError,
} from './errors.ts';
import {
  type AnyJob,
  assertAwaited,
  awaitedQueues,
  FAILED_KEPT_SECONDS,
  jobsByName,
  type PayloadOf,
  type QueueName,
  queueNames,
  type ResultOf,
} from './registry.ts';
import {
  type EnqueueOptions,
  type FlowChild,
  type FlowOptions,
  type JobInfo,
  type JobRunner,
  type JobStatus,
  organizationOfPayload,
  type QueueReport,
  type QueueReports,
  type QueueState,
  type RunOptions,
  type RunOutcome,
} from './runner.ts';

/** How a job ended, as its events (or its state) tell it. */
type Finish = { ok: true; value: unknown } | { ok: false; message: string };
/** A job's state as read from Redis, and how it ended when it has. */
type End = { state: string; finish: Finish | null };

/** A producer command that takes longer than this counts as Redis being unavailable. */
const COMMAND_TIMEOUT_MS = 2000;
/** After a wait runs out, reading the job's state may take this long before the answer is a plain 202. */
const SETTLE_TIMEOUT_MS = 500;

export interface BullmqOptions {
  redisUrl: string;
  /** Key prefix; tests give each file its own. */
  prefix?: string;
  waitMs: number;
  /**
   * Follow completion events so that `run` can wait for results (default). A worker process
   * only enqueues, so it opens no QueueEvents connections; its `run` refuses.
   */
  awaitResults?: boolean;
  onError?: (error: unknown) => void;
}

/** Connection options for BullMQ's blocking clients (workers, queue events). */
export function blockingConnection(redisUrl: string): RedisOptions {
  return {
    ...redisOptionsFromUrl(redisUrl),
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
}

export function redisOptionsFromUrl(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    ...(url.username && { username: decodeURIComponent(url.username) }),
    ...(url.password && { password: decodeURIComponent(url.password) }),
    ...(url.pathname.length > 1 && { db: Number(url.pathname.slice(1)) }),
    ...(url.protocol === 'rediss:' && { tls: {} }),
  };
}

export function jobOptions(job: AnyJob): JobsOptions {
  return {
    attempts: job.options.attempts,
    backoff: { type: 'exponential', delay: job.options.backoffMs },
    // Awaited jobs keep their result for late readers (GET /api/jobs/:id); never `true`.
    removeOnComplete: { age: job.options.keepCompletedSeconds, count: job.options.keepCount },
    removeOnFail: { age: FAILED_KEPT_SECONDS, count: job.options.keepCount },
  };
}

function queueOf(jobId: string): QueueName | null {
  const queue = jobId.split('-', 1)[0];
  return (queueNames as readonly string[]).includes(queue ?? '') ? (queue as QueueName) : null;
}

function statusOf(state: string): JobStatus {
  if (state === 'prioritized' || state === 'waiting' || state === 'wait') return 'waiting';
  if (['delayed', 'active', 'waiting-children', 'completed', 'failed'].includes(state)) return state as JobStatus;
  return 'unknown';
}

function queueState(counts: { waiting: number; delayed: number; workers: number }): QueueState {
  if (counts.workers > 0) return 'ok';
  return counts.waiting + counts.delayed > 0 ? 'no_worker' : 'idle';
}

/**
 * BullMQ transport for producers (the API): one Queue and one long-lived QueueEvents
 * per queue, created at start. Producers do not queue commands while Redis is away:
 * an add fails at once and the caller answers 503.
 */
export function createBullmqRunner(options: BullmqOptions): JobRunner & { queues: Map<QueueName, Queue> } {
  const prefix = options.prefix ?? 'vouch';
  let closed = false;
  // Reconnect while open (Redis may come back); stop for good once closed.
  const retryStrategy = (times: number) => (closed ? null : Math.min(times * 200, 2000));
  const producer = new Redis({
    ...redisOptionsFromUrl(options.redisUrl),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy,
  });
  producer.on('error', (error) => options.onError?.(error));
  // Schedules asked for by `every`, upserted again on every (re)connection: one asked for while
  // Redis was unreachable (or still connecting at start) is registered once it answers, and one
  // lost with Redis's data comes back. Upserting an existing schedule changes nothing.
  const schedules = new Map<string, () => Promise<unknown>>();
  const queues = new Map<QueueName, Queue>();
  const events = new Map<QueueName, QueueEvents>();
  // BullMQ starts each Queue once: it waits for the connection to be ready, then asks Redis its
  // version. That question, sent on a connection that dropped in between, fails at once (no
  // offline queue here), and BullMQ keeps the failure as the Queue's connection for good: every
  // later job refused until the process restarts. So the producer's queues skip that question and
  // take the version this connection reads at each 'ready' (BullMQ picks some scripts by it; until
  // it is known, the ones every supported Redis runs). The workers' and QueueEvents' connections
  // wait for Redis instead, and check its version.
  let serverVersion: string | undefined;
  producer.on('ready', () => {
    producer
      .info('server')
      .then((info) => {
        serverVersion = /^redis_version:(\S+)/m.exec(info)?.[1] ?? serverVersion;
      })
      .catch((error) => options.onError?.(error))
      // Then the schedules, with the scripts of that version.
      .then(() => {
        for (const upsert of schedules.values()) upsert().catch((error) => options.onError?.(error));
      });
  });
  class ProducerConnection extends RedisConnection {
    constructor(connection: ConnectionOptions, extra?: ConstructorParameters<typeof RedisConnection>[1]) {
      super(connection, { ...extra, skipVersionCheck: true });
    }
    override get redisVersion(): string {
      return serverVersion ?? super.redisVersion;
    }
  }
  const producerOptions = { connection: producer, prefix };
  for (const name of queueNames) {
    const queue = new Queue(name, producerOptions, ProducerConnection);
    queue.on('error', (error) => options.onError?.(error));
    queues.set(name, queue);
  }
  // Completion events only of the queues whose jobs a producer waits for.
  for (const name of options.awaitResults === false ? [] : awaitedQueues) {
    const queueEvents = new QueueEvents(name, {
      connection: { ...blockingConnection(options.redisUrl), retryStrategy },
      prefix,
    });
    queueEvents.on('error', (error) => options.onError?.(error));
    events.set(name, queueEvents);
  }
  const flows = new FlowProducer(producerOptions, ProducerConnection);
  flows.on('error', (error) => options.onError?.(error));
  // A connection that never becomes ready rejects its readiness promise; it is reported through 'error'.
  for (const client of [...queues.values(), flows]) void client.waitUntilReady().catch(() => {});
  const connectedEvents = new Set<QueueEvents>();
  for (const queueEvents of events.values()) {
    void queueEvents
      .waitUntilReady()
      .then(() => connectedEvents.add(queueEvents))
      .catch(() => {});
  }

  function queueFor(job: AnyJob): Queue {
    const queue = queues.get(job.queue);
    if (!queue) throw new Error(`unknown queue ${job.queue}`);
    return queue;
  }

  function unavailable(error: unknown): never {
    throw new JobsUnavailableError(error);
  }

  /**
   * BullMQ waits for its connection to become ready before any command; a producer
   * must not. While Redis is away, fail at once; a command that still hangs is cut off.
   */
  async function guarded<T>(command: () => Promise<T>): Promise<T> {
    if (producer.status !== 'ready') unavailable(new Error(`redis connection is ${producer.status}`));
    let timer: NodeJS.Timeout | undefined;
    const cutoff = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis command timed out')), COMMAND_TIMEOUT_MS);
    });
    try {
      return await Promise.race([command(), cutoff]);
    } catch (error) {
      unavailable(error);
    } finally {
      clearTimeout(timer);
    }
  }

  function failure(id: string, reason: string): Error {
    const domain = decodeJobError(reason);
    return domain ? new DomainJobError(domain) : new JobFailedError(id, reason);
  }

  /**
   * A flow parent failed by its child (`failParentOnFailure`) has BullMQ's reason "child <key>
   * failed": the child's own reason says what happened (a dependency away or busy, a refusal), as
   * the in-process runner gives its parent the child's error. Read within SETTLE_TIMEOUT_MS; null
   * when the reason is no child's, or the child's is no encoded error.
   */
  async function childError(reason: string | undefined): Promise<EncodedJobError | null> {
    const key = /^child (.+) failed$/.exec(reason ?? '')?.[1];
    const parts = key?.split(':') ?? [];
    const childId = parts.at(-1);
    const queue = queues.get(parts.at(-2) as QueueName);
    if (!queue || !childId) return null;
    const child = await within(
      Job.fromId(queue, childId).catch(() => undefined),
      SETTLE_TIMEOUT_MS,
      undefined,
    );
    return decodeJobError(child?.failedReason);
  }

  /** The waiting caller's error for a failed job: a flow parent's is its child's (childError). */
  async function flowFailure(id: string, reason: string): Promise<Error> {
    const domain = await childError(reason);
    return domain ? new DomainJobError(domain) : failure(id, reason);
  }

  /** `promise`, or `fallback` once `ms` have passed (a Redis that hangs must not hold the caller). */
  async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
    let timer: NodeJS.Timeout | undefined;
    promise.catch(() => {}); // a late rejection after the cutoff is not an unhandled one
    try {
      return await Promise.race([
        promise,
        new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms))),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The job's end as its queue's events tell it within `waitMs`, or null (nothing came in time).
   * BullMQ's `waitUntilFinished` does the same, but checks whether the job
   * ended before its listeners were on inside a promise nothing awaits: a Redis that fails that
   * check is an unhandled rejection, which ends the process. Here it is caught, and the wait's
   * timer answers (after which the job's state is read again).
   */
  /** The job's state read from Redis, and how it ended when it has (rejects when Redis does not answer). */
  async function endOf(job: Job, queue: Queue): Promise<End> {
    const state = await job.getState();
    if (state !== 'completed' && state !== 'failed') return { state, finish: null };
    const fresh = await Job.fromId(queue, job.id as string);
    if (!fresh) return { state, finish: null };
    const finish: Finish =
      state === 'completed' ? { ok: true, value: fresh.returnvalue } : { ok: false, message: fresh.failedReason };
    return { state, finish };
  }

  function finishOf(job: Job, queueEvents: QueueEvents, queue: Queue, waitMs: number): Promise<Finish | null> {
    const id = job.id as string;
    const completed = `completed:${id}`;
    const failed = `failed:${id}`;
    // Per-job events (`completed:<id>`) are not in BullMQ's listener types.
    const heard = queueEvents as unknown as EventEmitter;
    return new Promise((resolve) => {
      const settle = (outcome: Finish | null) => {
        clearTimeout(timer);
        heard.off(completed, onCompleted);
        heard.off(failed, onFailed);
        resolve(outcome);
      };
      const onCompleted = (args: { returnvalue: unknown }) => settle({ ok: true, value: args.returnvalue });
      const onFailed = (args: { failedReason: string }) => settle({ ok: false, message: args.failedReason });
      const timer = setTimeout(() => settle(null), waitMs);
      heard.on(completed, onCompleted);
      heard.on(failed, onFailed);
      // Ended before the listeners were on: its own state says so, read once the events are heard.
      void (async () => {
        await queueEvents.waitUntilReady();
        const { finish } = await endOf(job, queue);
        if (finish) settle(finish);
      })().catch(() => {});
    });
  }

  /**
   * Waits up to `waitMs` for the job's completion event, then answers from the job itself:
   * an event that lags or never arrives (a slow or blocked events connection) must not turn
   * a finished job into a 202, and a Redis that stops answering must not hold the caller
   * past the wait (the state read is cut off after SETTLE_TIMEOUT_MS).
   */
  async function wait<R>(job: Job, def: AnyJob, waitMs: number): Promise<RunOutcome<R>> {
    const queueEvents = events.get(def.queue);
    if (!queueEvents) throw new Error(`this process does not wait for jobs of ${def.queue} (awaitResults is off)`);
    const id = job.id as string;
    const queue = queueFor(def);
    // One timer bounds the whole wait, Redis answering or not.
    const answer = async (finish: Finish): Promise<RunOutcome<R>> => {
      if (!finish.ok) throw await flowFailure(id, finish.message);
      return { state: 'completed', jobId: id, result: def.result.parse(finish.value) as R };
    };
    const finished = await within(finishOf(job, queueEvents, queue, waitMs), waitMs + 50, null);
    if (finished) return answer(finished);
    // No event in time: the job itself says whether it ended. Its reads (state, then record) are
    // cut off together after SETTLE_TIMEOUT_MS, so a Redis that does not answer holds the caller
    // at most the wait + 50 ms + SETTLE_TIMEOUT_MS (docs/RELIABILITY.md, R8).
    const unknown: End = { state: 'unknown', finish: null };
    const end = await within(
      endOf(job, queue).catch(() => unknown),
      SETTLE_TIMEOUT_MS,
      unknown,
    );
    if (end.finish) return answer(end.finish);
    return { state: 'pending', jobId: id, status: statusOf(end.state) };
  }

  return {
    kind: 'bullmq',
    queues,

    async run<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: RunOptions) {
      assertAwaited(job);
      const data = job.payload.parse(payload);
      // BullMQ adds nothing when a job with this id exists: the wait is then for that job, and one
      // that failed is run again, its attempts anew (the in-process runner does the same).
      const added = await guarded(() =>
        queueFor(job).add(job.name, data, {
          ...jobOptions(job),
          jobId: `${job.queue}-${opts?.jobKey ?? randomUUID()}`,
        }),
      );
      if (opts?.jobKey && (await guarded(() => added.getState())) === 'failed') {
        await guarded(async () => {
          const failed = await Job.fromId(queueFor(job), added.id as string);
          await failed?.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        });
      }
      return wait<ResultOf<J>>(added, job, opts?.waitMs ?? options.waitMs);
    },

    async runFlow<J extends AnyJob>(parent: J, payload: PayloadOf<J>, children: FlowChild[], opts?: FlowOptions) {
      assertAwaited(parent);
      const node = await guarded(() =>
        flows.add({
          name: parent.name,
          queueName: parent.queue,
          data: parent.payload.parse(payload),
          opts: { ...jobOptions(parent), jobId: `${parent.queue}-${randomUUID()}` },
          children: children.map((child) => ({
            name: child.job.name,
            queueName: child.job.queue,
            data: child.job.payload.parse(child.payload),
            opts: { ...jobOptions(child.job), jobId: `${child.job.queue}-${randomUUID()}`, failParentOnFailure: true },
          })),
        }),
      );
      try {
        await opts?.onQueued?.(node.job.id as string);
      } catch (error) {
        // Taken back unless a worker already holds one of its jobs (BullMQ refuses to remove a locked job).
        await node.job.remove({ removeChildren: true }).catch(() => undefined);
        throw error;
      }
      return wait<ResultOf<J>>(node.job, parent, opts?.waitMs ?? options.waitMs);
    },

    async enqueue<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: EnqueueOptions) {
      const data = job.payload.parse(payload);
      const added = await guarded(() =>
        queueFor(job).add(job.name, data, {
          ...jobOptions(job),
          // BullMQ adds nothing when a job with this id exists.
          jobId: `${job.queue}-${opts?.jobKey ?? randomUUID()}`,
          ...(opts?.delayMs && { delay: opts.delayMs }),
          ...(opts?.dedupeId && { deduplication: { id: opts.dedupeId, keepLastIfActive: true } }),
        }),
      );
      return { jobId: added.id as string };
    },

    async every<J extends AnyJob>(job: J, payload: PayloadOf<J>, everyMs: number) {
      const { attempts, backoff, removeOnComplete, removeOnFail } = jobOptions(job);
      const data = job.payload.parse(payload);
      const upsert = () =>
        queueFor(job).upsertJobScheduler(
          job.name,
          { every: everyMs },
          { name: job.name, data, opts: { attempts, backoff, removeOnComplete, removeOnFail } },
        );
      schedules.set(job.name, upsert);
      // At start the connection is usually still being made: the schedule is then upserted when it is ready.
      if (producer.status === 'ready') await guarded(upsert);
    },

    async get(jobId: string): Promise<JobInfo | null> {
      const queueName = queueOf(jobId);
      const queue = queueName ? queues.get(queueName) : undefined;
      if (!queue) return null;
      const job = await guarded(() => Job.fromId(queue, jobId));
      if (!job) return null;
      const status = statusOf(await guarded(() => job.getState()));
      let progress = typeof job.progress === 'number' ? job.progress : 0;
      if (status === 'waiting-children') {
        const counts = await guarded(() => job.getDependenciesCount({ processed: true, unprocessed: true }));
        const total = (counts.processed ?? 0) + (counts.unprocessed ?? 0);
        progress = total ? Math.floor(((counts.processed ?? 0) / total) * 100) : 0;
      }
      if (status === 'completed') progress = 100;
      const def = jobsByName.get(job.name);
      // A recomputation failed by its chunk reads back with the chunk's reason, as its waiting
      // caller is answered and as the in-process runner records it (a busy database: 503).
      const domain =
        status === 'failed' ? (decodeJobError(job.failedReason) ?? (await childError(job.failedReason))) : null;
      return {
        id: jobId,
        name: job.name,
        queue: queue.name,
        status,
        progress,
        result: status === 'completed' && def ? def.result.parse(job.returnvalue) : null,
        error:
          status === 'failed'
            ? (domain ?? { code: 'INTERNAL_ERROR', message: job.failedReason || 'job failed' })
            : null,
        createdAt: job.timestamp,
        finishedAt: job.finishedOn ?? null,
        organizationId: organizationOfPayload(job.data),
      };
    },

    async ping() {
      await guarded(() => producer.ping());
    },

    async inspect() {
      const reports = await Promise.all(
        [...queues].map(async ([name, queue]): Promise<[QueueName, QueueReport]> => {
          try {
            const [counts, workers] = await guarded(() =>
              Promise.all([queue.getJobCounts('waiting', 'prioritized', 'delayed'), queue.getWorkers()]),
            );
            // Where CLIENT LIST is refused (some managed Redis), BullMQ answers one made-up entry
            // without a client id instead of failing: the workers are then unknown, not one.
            if (workers.some((client) => client.id === undefined)) return [name, { state: 'unknown' }];
            const waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.paused ?? 0);
            const delayed = counts.delayed ?? 0;
            return [
              name,
              {
                state: queueState({ waiting, delayed, workers: workers.length }),
                waiting,
                delayed,
                workers: workers.length,
              },
            ];
          } catch {
            return [name, { state: 'unknown' }];
          }
        }),
      );
      return Object.fromEntries(reports) as QueueReports;
    },

    async close() {
      // A graceful close waits for Redis; if Redis is away, give up after a moment.
      // With `closed` set, the retry strategy lets the sockets end instead of reconnecting.
      closed = true;
      // BullMQ drops its error handlers when closing a QueueEvents that is still connecting,
      // and a late connection error would then be thrown; such a one ends by itself now.
      const closables = [...connectedEvents, ...queues.values(), flows];
      const graceful = Promise.allSettled(closables.map((c) => c.close()));
      await Promise.race([graceful, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      producer.disconnect();
    },
  };
}
