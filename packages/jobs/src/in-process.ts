import { randomUUID } from 'node:crypto';
import { DEPENDENCY_UNAVAILABLE, DomainJobError, JobFailedError } from './errors.ts';
import type { Executor } from './executor.ts';
import {
  type AnyJob,
  assertAwaited,
  FAILED_KEPT_SECONDS,
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
  type RunOptions,
  type RunOutcome,
} from './runner.ts';

interface JobRecord {
  info: JobInfo;
  job: AnyJob;
  payload: unknown;
  /** 1 for the first run; grows with each retry. */
  attempt: number;
  dedupeId?: string;
  children: string[];
  /** What a processor threw when it failed for a reason other than a domain refusal. */
  cause?: unknown;
  finished: Promise<void>;
  finish: () => void;
}

export interface InProcessOptions {
  /** The same executor the BullMQ workers use (executor.ts): same parsing, attempts and backoff. */
  execute: Executor;
  /** Jobs of each queue running at once. */
  concurrency: Readonly<Record<QueueName, number>>;
  waitMs: number;
  /** Finished jobs kept for GET /api/jobs/:id. */
  keepFinished?: number;
  onError?: (error: unknown, info: JobInfo) => void;
}

/** Bounded FIFO concurrency for one queue. */
class Lane {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {}
  async acquire(): Promise<void> {
    if (this.running < this.limit) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

/**
 * Runs jobs inside this process with the same processors the workers use; for the
 * embedded mode without Redis. Jobs live in memory: a restart forgets them.
 */
export function createInProcessRunner(options: InProcessOptions): JobRunner {
  const records = new Map<string, JobRecord>();
  const lanes = new Map<QueueName, Lane>(queueNames.map((q) => [q, new Lane(options.concurrency[q])]));
  const dedupe = new Map<string, string>();
  const keep = options.keepFinished ?? 5000;
  /** Ids of finished jobs per queue, oldest first (retention). */
  const finishedOf = new Map<QueueName, string[]>();
  let closed = false;
  const timers: NodeJS.Timeout[] = [];
  /** Runs under way (or waiting for their lane): what close waits for. */
  const running = new Set<Promise<void>>();

  function create(job: AnyJob, payload: unknown, status: JobStatus, key?: string): JobRecord {
    const parsed = job.payload.parse(payload);
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const record: JobRecord = {
      info: {
        id: `${job.queue}-${key ?? randomUUID()}`,
        name: job.name,
        queue: job.queue,
        status,
        progress: 0,
        result: null,
        error: null,
        createdAt: Date.now(),
        finishedAt: null,
        organizationId: organizationOfPayload(parsed),
      },
      job,
      payload: parsed,
      attempt: 1,
      children: [],
      finished,
      finish,
    };
    records.set(record.info.id, record);
    return record;
  }

  /** A started job no longer stands for its dedupe id — unless a newer job took the id since. */
  function forgetDedupe(record: JobRecord) {
    if (record.dedupeId && dedupe.get(record.dedupeId) === record.info.id) dedupe.delete(record.dedupeId);
  }

  function complete(record: JobRecord, result: unknown, error: JobInfo['error']) {
    record.info.status = error ? 'failed' : 'completed';
    record.info.result = result;
    record.info.error = error;
    record.info.progress = error ? record.info.progress : 100;
    record.info.finishedAt = Date.now();
    forgetDedupe(record);
    record.finish();
    // A job that keeps no result (keepCount 0: nobody reads it) is forgotten now and trims
    // nothing, as BullMQ removes it: a burst of transaction checks must not trim the results of
    // the verifications that share their queue.
    const { keepCount, keepCompletedSeconds } = record.job.options;
    if (keepCount === 0) {
      records.delete(record.info.id);
      return;
    }
    // Forget the oldest finished jobs of this queue beyond the retention count, per queue as
    // BullMQ keeps them (by the count of the job that just finished): a burst of refreshes must
    // not trim the results of awaited jobs.
    const queue = record.job.queue;
    const done = finishedOf.get(queue) ?? [];
    finishedOf.set(queue, done);
    done.push(record.info.id);
    while (done.length > Math.min(keep, keepCount)) {
      const id = done.shift() as string;
      if (records.get(id)?.info.finishedAt !== null) records.delete(id);
    }
    // And by age, as BullMQ does when a job finishes: the jobs of the same end (completed or
    // failed) that finished longer ago than the finishing job keeps such ones (an hour; failed
    // ones a week) are gone, so a result read after its retention is a 404 on both transports.
    const cutoff = (record.info.finishedAt as number) - (error ? FAILED_KEPT_SECONDS : keepCompletedSeconds) * 1000;
    for (let i = 0; i < done.length; ) {
      const id = done[i] as string;
      const old = records.get(id)?.info;
      if (old && old.finishedAt !== null && old.finishedAt >= cutoff) break;
      if (!old || (old.finishedAt !== null && old.status === record.info.status)) {
        if (old) records.delete(id);
        done.splice(i, 1);
      } else i++;
    }
  }

  async function execute(record: JobRecord, childrenValues: unknown[] = []) {
    const lane = lanes.get(record.job.queue);
    if (!lane) throw new Error(`no lane for queue ${record.job.queue}`);
    await lane.acquire();
    try {
      // Closed while it waited for its lane: it does not start.
      if (closed) return;
      forgetDedupe(record);
      record.info.status = 'active';
      const outcome = await options.execute({
        job: record.job,
        data: record.payload,
        attempt: record.attempt,
        queuedAt: record.info.createdAt,
        context: {
          jobId: record.info.id,
          updateProgress: async (progress: number) => {
            record.info.progress = progress;
          },
          childrenValues: async () => childrenValues,
        },
      });
      switch (outcome.kind) {
        case 'completed':
          complete(record, outcome.result, null);
          break;
        case 'refused':
          complete(record, null, outcome.error);
          break;
        case 'later':
          // The job's own schedule: run again after its delay, attempt not spent.
          record.info.status = 'delayed';
          schedule(record, outcome.delayMs, childrenValues);
          break;
        case 'unavailable':
        case 'retry':
          // Run again after the delay, as BullMQ would: the waiting caller keeps waiting.
          options.onError?.(outcome.cause, record.info);
          if (outcome.kind === 'retry') record.attempt++;
          record.info.status = 'delayed';
          schedule(record, outcome.delayMs, childrenValues);
          break;
        case 'failed':
          options.onError?.(outcome.cause, record.info);
          record.cause = outcome.cause;
          // As a BullMQ worker records it: a dependency that was away or busy is SERVICE_UNAVAILABLE
          // for whoever reads the job later (the waiting caller still gets the error itself).
          complete(
            record,
            null,
            outcome.dependency
              ? DEPENDENCY_UNAVAILABLE
              : {
                  code: 'INTERNAL_ERROR',
                  message: outcome.cause instanceof Error ? outcome.cause.message : String(outcome.cause),
                },
          );
      }
    } finally {
      lane.release();
    }
  }

  function schedule(record: JobRecord, delayMs = 0, childrenValues?: unknown[]) {
    const start = () => {
      if (closed) return;
      const run = execute(record, childrenValues);
      running.add(run);
      void run.finally(() => running.delete(run));
    };
    if (delayMs > 0) setTimeout(start, delayMs).unref();
    else queueMicrotask(start);
  }

  async function wait<R>(record: JobRecord, waitMs: number): Promise<RunOutcome<R>> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), waitMs);
    });
    const outcome = await Promise.race([record.finished.then(() => 'done' as const), timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') return { state: 'pending', jobId: record.info.id, status: record.info.status };
    if (record.info.error) {
      // The caller waiting in this process gets what the processor threw, so that the API
      // classifies it (a database outage is a 503, not a 500).
      if (record.cause !== undefined) throw record.cause;
      if (record.info.error.code === 'INTERNAL_ERROR')
        throw new JobFailedError(record.info.id, record.info.error.message);
      throw new DomainJobError(record.info.error);
    }
    return { state: 'completed', jobId: record.info.id, result: record.info.result as R };
  }

  return {
    kind: 'in-process',

    async run<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: RunOptions) {
      assertAwaited(job);
      // As BullMQ: a job with this id, running or completed and kept, is waited for, not added
      // again; a failed one is run again (bullmq.ts retries it).
      const existing = opts?.jobKey ? records.get(`${job.queue}-${opts.jobKey}`) : undefined;
      if (existing && existing.info.status !== 'failed')
        return wait<ResultOf<J>>(existing, opts?.waitMs ?? options.waitMs);
      if (existing) {
        const done = finishedOf.get(job.queue) ?? [];
        const at = done.indexOf(existing.info.id);
        if (at >= 0) done.splice(at, 1);
      }
      const record = create(job, payload, 'waiting', opts?.jobKey);
      schedule(record);
      return wait<ResultOf<J>>(record, opts?.waitMs ?? options.waitMs);
    },

    async runFlow<J extends AnyJob>(parent: J, payload: PayloadOf<J>, children: FlowChild[], opts?: FlowOptions) {
      assertAwaited(parent);
      const parentRecord = create(parent, payload, 'waiting-children');
      try {
        await opts?.onQueued?.(parentRecord.info.id);
      } catch (error) {
        records.delete(parentRecord.info.id);
        throw error;
      }
      const childRecords = children.map((c) => create(c.job, c.payload, 'waiting'));
      parentRecord.children = childRecords.map((r) => r.info.id);
      let done = 0;
      for (const child of childRecords) {
        void child.finished.then(() => {
          done++;
          parentRecord.info.progress = Math.floor((done / childRecords.length) * 100);
        });
        schedule(child);
      }
      void Promise.all(childRecords.map((r) => r.finished)).then(() => {
        const failed = childRecords.find((r) => r.info.error);
        if (failed) {
          parentRecord.cause = failed.cause;
          complete(parentRecord, null, failed.info.error);
        } else
          schedule(
            parentRecord,
            0,
            childRecords.map((r) => r.info.result),
          );
      });
      return wait<ResultOf<J>>(parentRecord, opts?.waitMs ?? options.waitMs);
    },

    async enqueue<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: EnqueueOptions) {
      if (opts?.dedupeId) {
        const existing = dedupe.get(opts.dedupeId);
        if (existing && records.get(existing)?.info.status !== 'active') return { jobId: existing };
      }
      if (opts?.jobKey) {
        // As BullMQ: a job with this id that has not finished makes this a no-op.
        const existing = records.get(`${job.queue}-${opts.jobKey}`);
        if (existing && existing.info.finishedAt === null) return { jobId: existing.info.id };
      }
      const record = create(job, payload, opts?.delayMs ? 'delayed' : 'waiting', opts?.jobKey);
      if (opts?.dedupeId) {
        record.dedupeId = opts.dedupeId;
        dedupe.set(opts.dedupeId, record.info.id);
      }
      schedule(record, opts?.delayMs);
      return { jobId: record.info.id };
    },

    async every<J extends AnyJob>(job: J, payload: PayloadOf<J>, everyMs: number) {
      // As a BullMQ job scheduler, which adds a schedule's next run when one starts: while a run
      // still waits for its queue (busy with a long job), the interval adds none behind it.
      let last: string | undefined;
      const tick = () => {
        if (closed || (last !== undefined && records.get(last)?.info.status === 'waiting')) return;
        this.enqueue(job, payload).then(
          ({ jobId }) => {
            last = jobId;
          },
          () => {},
        );
      };
      // A BullMQ job scheduler with `every` runs its first job at once: so does this one.
      tick();
      const timer = setInterval(tick, everyMs);
      timer.unref();
      timers.push(timer);
    },

    async get(jobId: string) {
      const record = records.get(jobId);
      return record ? { ...record.info } : null;
    },

    async ping() {},

    async inspect() {
      const reports = Object.fromEntries(
        queueNames.map((q): [QueueName, QueueReport] => [q, { state: 'in_process', waiting: 0, delayed: 0 }]),
      ) as QueueReports;
      for (const { info } of records.values()) {
        const report = reports[info.queue as QueueName];
        if (info.status === 'waiting') report.waiting = (report.waiting ?? 0) + 1;
        else if (info.status === 'delayed') report.delayed = (report.delayed ?? 0) + 1;
      }
      return reports;
    },

    async close() {
      closed = true;
      for (const timer of timers) clearInterval(timer);
      // Let running jobs finish their run (one that ends asking to run again is not run again);
      // waiting ones are dropped with the process.
      await Promise.all([...running]);
    },
  };
}
