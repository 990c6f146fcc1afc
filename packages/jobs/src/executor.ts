import { DomainJobError, type EncodedJobError, RunAgainLater } from './errors.ts';
import type { JobContext, Processors } from './processor.ts';
import { type AnyJob, jobsByName } from './registry.ts';

/** While a dependency is unavailable, a job is tried again this often, without spending an attempt… */
export const UNAVAILABLE_RETRY_MS = 1000;
/** …for at most this long after it was queued; then its attempts and backoff take over. */
export const UNAVAILABLE_RETRY_FOR_MS = 10 * 60_000;

/**
 * What becomes of a run, decided once for both transports (BullMQ workers and the in-process
 * runner), which only carry it out:
 * - `completed`: the processor's result, checked against the registry's result schema;
 * - `refused`: a domain refusal (or a payload the registry refuses): permanent, never retried;
 * - `unavailable`: a dependency (the database) is down — run again in `delayMs` without
 *   spending an attempt, while the job is younger than UNAVAILABLE_RETRY_FOR_MS;
 * - `later`: the processor asked to run again after a delay of its choosing (RunAgainLater): not
 *   an error, no attempt spent;
 * - `retry`: any other error with attempts left — run again after the registry's exponential
 *   backoff, `backoffMs × 2^(attempt−1)` (BullMQ's own `exponential` formula);
 * - `failed`: any other error on the last attempt.
 */
export type Execution =
  | { kind: 'completed'; result: unknown }
  | { kind: 'refused'; error: EncodedJobError }
  | { kind: 'unavailable'; delayMs: number; cause: unknown }
  | { kind: 'later'; delayMs: number; reason: string }
  | { kind: 'retry'; delayMs: number; cause: unknown }
  /** `dependency`: the last error was a dependency unavailable or busy (callers answer it 503). */
  | { kind: 'failed'; cause: unknown; dependency?: boolean };

export interface ExecutorOptions {
  processors: Processors;
  /** Errors that mean a dependency is down rather than the job being wrong (e.g. the database). */
  isUnavailable?: (error: unknown) => boolean;
  /** Errors that mean a dependency is busy (a statement or lock timeout): retried like any error, but answered 503. */
  isBusy?: (error: unknown) => boolean;
}

export interface ExecutionRequest {
  job: AnyJob;
  data: unknown;
  /** 1 for the first run. */
  attempt: number;
  /** When the job was queued (ms since epoch). */
  queuedAt: number;
  context: Omit<JobContext, 'attempt'>;
}

export type Executor = (request: ExecutionRequest) => Promise<Execution>;

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

/** Backoff before attempt `attempt + 1` of `job`. */
export function backoffMs(job: AnyJob, attempt: number): number {
  return Math.round(job.options.backoffMs * 2 ** (attempt - 1));
}

/** Parse the payload, run the job's one processor, parse its result, and classify what it threw. */
export function createExecutor(options: ExecutorOptions): Executor {
  verifyProcessors(options.processors);
  return async ({ job, data, attempt, queuedAt, context }) => {
    const parsed = job.payload.safeParse(data);
    if (!parsed.success) {
      return { kind: 'refused', error: { code: 'INVALID_JOB_PAYLOAD', message: parsed.error.message } };
    }
    const processor = options.processors[job.name] as (p: unknown, c: JobContext) => Promise<unknown>;
    try {
      const result = await processor(parsed.data, { ...context, attempt });
      return { kind: 'completed', result: job.result.parse(result) };
    } catch (error) {
      if (error instanceof RunAgainLater) {
        return { kind: 'later', delayMs: Math.max(0, Math.round(error.delayMs)), reason: error.message };
      }
      if (error instanceof DomainJobError) return { kind: 'refused', error: error.encoded };
      if (options.isUnavailable?.(error) && Date.now() - queuedAt < UNAVAILABLE_RETRY_FOR_MS) {
        return { kind: 'unavailable', delayMs: UNAVAILABLE_RETRY_MS, cause: error };
      }
      if (attempt < job.options.attempts) return { kind: 'retry', delayMs: backoffMs(job, attempt), cause: error };
      const dependency = options.isUnavailable?.(error) === true || options.isBusy?.(error) === true;
      return { kind: 'failed', cause: error, ...(dependency && { dependency }) };
    }
  };
}
