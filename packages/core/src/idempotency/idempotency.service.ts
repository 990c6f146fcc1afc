import { createHash } from 'node:crypto';
import type { DB, Kysely } from '@vouch/db';
import { canonicalJson } from '../shared/canonical-json.ts';
import type { Clock } from '../shared/clock.ts';
import { DomainError, IdempotencyInProgressError, IdempotencyKeyReusedError } from '../shared/errors.ts';
import * as repo from './idempotency.repository.ts';

/** How long a key and its stored response are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface IdempotentRequest {
  /** Keys are an organization's own: two organizations never share one. */
  organizationId: string;
  /** What the key is scoped to within the organization: the route. */
  scope: string;
  key: string;
  /** The request's meaningful content (path params and body). */
  request: unknown;
}

/** What the first request answered, replayed for a retry. */
export interface StoredOutcome {
  statusCode: number;
  ok: boolean;
  data?: unknown;
  error?: { code: DomainError['code']; message: string; details?: unknown };
}

/**
 * What a request under a key came to, once stored and committed: the work's answer (`value`, when
 * `outcome.ok`) or its refusal (`outcome.error`), or the answer stored before (`replayed`).
 * Anything thrown instead committed nothing.
 */
export type IdempotentResult<T> =
  | { replayed: false; value: T | undefined; outcome: StoredOutcome }
  | { replayed: true; outcome: StoredOutcome };

export function requestHash(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

export function createIdempotencyService({ db, clock }: { db: Kysely<DB>; clock: Clock }) {
  return {
    /**
     * Runs `work` at most once per key. The work, its outcome (value or domain
     * error) and the key are committed in one transaction, so a crash can never
     * leave an effect without its key or a key without its effect. A concurrent
     * request with the same key is refused with 409 rather than waiting.
     */
    async execute<T>(
      req: IdempotentRequest,
      statusOf: (value: T) => number,
      work: (trx: Kysely<DB>) => Promise<T>,
    ): Promise<IdempotentResult<T>> {
      const hash = requestHash(req.request);
      const result = await db.transaction().execute(async (trx) => {
        const now = clock();
        if (!(await repo.tryLockKey(trx, req.organizationId, req.scope, req.key)))
          throw new IdempotencyInProgressError();

        const stored = await repo.findLiveKey(trx, req.organizationId, req.scope, req.key, now);
        if (stored) {
          if (stored.request_hash !== hash) throw new IdempotencyKeyReusedError();
          return { replayed: true as const, outcome: stored.response as unknown as StoredOutcome };
        }

        let value: T | undefined;
        let outcome: StoredOutcome;
        try {
          value = await work(trx);
          outcome = { statusCode: statusOf(value), ok: true, data: value };
        } catch (error) {
          // A domain refusal is an answer too (a refused spend stays in the ledger); a dependency
          // that is away (503) is not: nothing is kept, and a retry under the key runs again. Nor
          // is bad input (400), refused before anything was done as the schema refuses it: a
          // timestamp ahead of the clock is not ahead any more when the same request comes again.
          if (!(error instanceof DomainError) || error.code === 'SERVICE_UNAVAILABLE' || error.status === 400)
            throw error;
          outcome = {
            statusCode: error.status,
            ok: false,
            error: { code: error.code, message: error.message, details: error.details },
          };
        }
        await repo.storeKey(trx, {
          organizationId: req.organizationId,
          scope: req.scope,
          key: req.key,
          requestHash: hash,
          statusCode: outcome.statusCode,
          response: JSON.stringify(outcome),
          now,
          expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
        });
        return { replayed: false as const, value, outcome };
      });
      return result;
    },

    /** Drops keys past their retention; returns how many. */
    async purgeExpired(): Promise<number> {
      return repo.deleteExpiredKeys(db, clock());
    },
  };
}

export function rebuildError(outcome: StoredOutcome): DomainError {
  const error = outcome.error;
  return new DomainError(error?.code ?? 'INTERNAL_ERROR', error?.message ?? 'stored failure', error?.details);
}

export type IdempotencyService = ReturnType<typeof createIdempotencyService>;
