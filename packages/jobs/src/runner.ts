import type { AnyJob, PayloadOf, ResultOf } from './registry.ts';

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
}

export interface FlowChild<J extends AnyJob = AnyJob> {
  job: J;
  payload: PayloadOf<J>;
}

/**
 * The job interface the API uses, whatever carries the jobs: BullMQ over Redis
 * or the in-process runner. Payloads are validated against the registry first.
 */
export interface JobRunner {
  readonly kind: 'bullmq' | 'in-process';
  /** Enqueue and wait up to the wait timeout; `pending` when the wait runs out. */
  run<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: { waitMs?: number }): Promise<RunOutcome<ResultOf<J>>>;
  /** A parent job that runs after all its children; waits like `run`. */
  runFlow<J extends AnyJob>(
    parent: J,
    payload: PayloadOf<J>,
    children: FlowChild[],
    opts?: { waitMs?: number },
  ): Promise<RunOutcome<ResultOf<J>>>;
  enqueue<J extends AnyJob>(job: J, payload: PayloadOf<J>, opts?: EnqueueOptions): Promise<{ jobId: string }>;
  /**
   * Runs `job` every `everyMs` from now on: one schedule per job name however many processes ask
   * (a BullMQ job scheduler, registered as soon as Redis answers and again whenever it reconnects),
   * or a timer of this process with the in-process runner.
   */
  every<J extends AnyJob>(job: J, payload: PayloadOf<J>, everyMs: number): Promise<void>;
  get(jobId: string): Promise<JobInfo | null>;
  /** Counts per queue and state, for metrics and readiness. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
