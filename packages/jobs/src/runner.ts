import type { AnyJob, PayloadOf, QueueName, ResultOf } from './registry.ts';

export type JobStatus = 'waiting' | 'delayed' | 'active' | 'waiting-children' | 'completed' | 'failed' | 'unknown';

export interface JobInfo {
  id: string;
  name: string;
  queue: string;
  status: JobStatus;
  progress: number;
  result: unknown;
  error: { code: string; message: string; details?: unknown } | null;
  createdAt: number;
  finishedAt: number | null;
  /** The organization that queued it (its payload's `organizationId` or `actor`); null for the service's own jobs. */
  organizationId: string | null;
}

/** The organization a job's payload names, if any. */
export function organizationOfPayload(payload: unknown): string | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const p = payload as { organizationId?: unknown; actor?: { organizationId?: unknown } };
  const id = p.organizationId ?? p.actor?.organizationId;
  return typeof id === 'string' ? id : null;
}

export type RunOutcome<R> =
  | { state: 'completed'; jobId: string; result: R }
  | { state: 'pending'; jobId: string; status: JobStatus };

export interface EnqueueOptions {
  /** Collapse jobs with the same id while one waits; one more runs if added while active. */
  dedupeId?: string;
  delayMs?: number;
  /**
   * The job's id is `<queue>-<jobKey>` instead of a random one: while a job with that id is
   * waiting, delayed or running, enqueuing it again adds nothing (a finished one may be added
   * again once it is gone: jobs that keep no result are gone when they finish).
   */
  jobKey?: string;
}

export interface RunOptions {
  waitMs?: number;
  jobKey?: string;
}

export interface FlowChild<J extends AnyJob = AnyJob> {
  job: J;
  payload: PayloadOf<J>;
}

/**
 * Whether a queue's jobs have someone to run them:
 * - `ok`: at least one BullMQ worker is connected to the queue;
 * - `idle`: no worker, and nothing waiting or delayed;
 * - `no_worker`: jobs waiting or delayed and no worker connected (BullMQ moves a delayed job to
 *   waiting only through a worker, so without one a delayed job never becomes due);
 * - `unknown`: the figures could not be read (Redis away or slow, or it refuses CLIENT LIST);
 * - `in_process`: the in-process runner: this process runs the jobs itself.
 */
export type QueueState = 'ok' | 'idle' | 'no_worker' | 'unknown' | 'in_process';

export interface QueueReport {
  state: QueueState;
  /** Jobs ready to run (waiting, prioritized or in a paused queue); absent when unknown. */
  waiting?: number;
  /** Jobs scheduled for later or waiting to be retried. */
  delayed?: number;
  /** BullMQ workers connected to the queue, from any process (Redis client names); BullMQ only. */
  workers?: number;
}

export type QueueReports = Record<QueueName, QueueReport>;

export interface FlowOptions {
  waitMs?: number;
  onQueued?: (jobId: string) => Promise<void>;
}

/**
 * The job interface the API uses, whatever carries the jobs: BullMQ over Redis
 * or the in-process runner. Payloads are validated against the registry first.
 */
export interface JobRunner {
  readonly kind: 'bullmq' | 'in-process';
  /**
   * Enqueue and wait up to the wait timeout; `pending` when the wait runs out. With `jobKey` the
   * job's id is `<queue>-<jobKey>`: while a job with that id exists (waiting, running, or
   * finished and kept), the call waits for that job and answers its result instead of adding one.
   */
  run<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: RunOptions): Promise<RunOutcome<ResultOf<J>>>;
  /**
   * A parent job that runs after all its children; waits like `run`. `onQueued` runs once the
   * flow is queued, before the wait (e.g. to record who asked, with the job's id); when it fails
   * the flow is taken back (in process always; on BullMQ unless a worker already took a child).
   */
  runFlow<J extends AnyJob>(
    parent: J,
    payload: PayloadOf<J>,
    children: FlowChild[],
    opts?: FlowOptions,
  ): Promise<RunOutcome<ResultOf<J>>>;
  enqueue<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: EnqueueOptions): Promise<{ jobId: string }>;
  /**
   * Runs `job` every `everyMs` from now on: one schedule per job name however many processes ask
   * (a BullMQ job scheduler, registered as soon as Redis answers and again whenever it reconnects),
   * or a timer of this process with the in-process runner.
   */
  every<J extends AnyJob>(job: J, payload: PayloadOf<J>, everyMs: number): Promise<void>;
  get(jobId: string): Promise<JobInfo | null>;
  /** Answers when the transport is reachable (readiness); a no-op in process. */
  ping(): Promise<void>;
  /**
   * Per queue: jobs waiting and delayed, and who runs them (readiness). Reads Redis every call;
   * the API caches the answer (readiness.ts).
   */
  inspect(): Promise<QueueReports>;
  close(): Promise<void>;
}
