/** A job failure that carries a domain error across the queue (code, message, details). */
export interface EncodedJobError {
  code: string;
  message: string;
  details?: unknown;
}

const MARKER = 'vouch-domain-error:';

export function encodeJobError(error: EncodedJobError): string {
  return `${MARKER}${JSON.stringify({ code: error.code, message: error.message, details: error.details })}`;
}

export function decodeJobError(reason: string | undefined): EncodedJobError | null {
  if (!reason?.startsWith(MARKER)) return null;
  try {
    return JSON.parse(reason.slice(MARKER.length)) as EncodedJobError;
  } catch {
    return null;
  }
}

/** How a job whose last attempt met a dependency away or busy (the database) ends, on either transport: a 503. */
export const DEPENDENCY_UNAVAILABLE: EncodedJobError = {
  code: 'SERVICE_UNAVAILABLE',
  message: 'a dependency is unavailable; retry shortly',
};

/** The job system cannot be reached (Redis down); callers answer 503. */
export class JobsUnavailableError extends Error {
  readonly code = 'SERVICE_UNAVAILABLE';
  constructor(cause?: unknown) {
    super('the job queue is unavailable; retry shortly', { cause });
    this.name = 'JobsUnavailableError';
  }
}

/** A job failed for a reason that is not a domain error. */
export class JobFailedError extends Error {
  constructor(
    readonly jobId: string,
    reason: string,
  ) {
    super(`job ${jobId} failed: ${reason}`);
    this.name = 'JobFailedError';
  }
}

/** Thrown by processors (and re-thrown to callers) for a domain refusal found while running a job. */
export class DomainJobError extends Error {
  constructor(readonly encoded: EncodedJobError) {
    super(encoded.message);
    this.name = 'DomainJobError';
  }
}

/**
 * Thrown by a processor that has done its part for now and wants its job run again after
 * `delayMs`, without spending an attempt: the job keeps a schedule of its own (a webhook
 * delivery's attempts and backoff are its row's, so they survive a lost job). Both transports
 * carry it out the same way (docs/jobs.md).
 */
export class RunAgainLater extends Error {
  constructor(
    readonly delayMs: number,
    reason = 'run again later',
  ) {
    super(reason);
    this.name = 'RunAgainLater';
  }
}
