import { createHash, randomUUID } from 'node:crypto';
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
  /** A queued request's: the job key its claim named (its answer's `X-Job-Id`). */
  job?: string;
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

/**
 * A request under a key whose work a worker does (a queued job): what its job carries to store
 * the answer under the key, in the transaction of the job's effect. The organization is the job's
 * actor's.
 */
export interface KeyedJob {
  scope: string;
  key: string;
  requestHash: string;
  /**
   * The claim's own job key (a new one each time the key is claimed; the job's id is
   * `<queue>-<claim>`): a retry of the claimed request joins that job, and a claim is given up
   * only by the job it was made for.
   */
  claim: string;
}

/**
 * What a refusal stores under a key: a domain refusal is an answer (a refused spend stays in the
 * ledger); a dependency that is away (503) is not: nothing was done, and a retry runs again; nor
 * is bad input (400), refused before anything was done as the schema refuses it (a timestamp
 * ahead of the clock is not ahead any more when the same request comes again); nor is a key
 * in use or used for another request, which is about the key, not the request; nor is a 403,
 * which is about the API key that sent it (the one that asked for a review may not decide it, one
 * that does not own an agent may not score it), while every API key of the organization shares
 * its Idempotency-Keys: stored, it would be replayed to a key that may. Null: not stored.
 */
export function refusalOutcome(error: unknown): StoredOutcome | null {
  if (!(error instanceof DomainError)) return null;
  if (error.code === 'SERVICE_UNAVAILABLE' || error.status === 400 || error.status === 403) return null;
  if (error.code === 'IDEMPOTENCY_IN_PROGRESS' || error.code === 'IDEMPOTENCY_KEY_REUSED') return null;
  return {
    statusCode: error.status,
    ok: false,
    error: { code: error.code, message: error.message, details: error.details },
  };
}

/** A stored answer that was a refusal, as the error it was; a success as its data. */
export function outcomeValue(outcome: StoredOutcome): unknown {
  if (!outcome.ok) throw rebuildError(outcome);
  return outcome.data;
}

/**
 * A key claimed by a request whose job has not stored its answer yet: the first request under a
 * key claims it before its job is queued, so that another request under the key, at any moment
 * after, is refused and never queued.
 */
const CLAIMED: StoredOutcome = { statusCode: 0, ok: false };

/**
 * In a job's transaction: waits for the key's lock (a job run twice at once, or the API storing a
 * refusal), then answers what is stored under it, null when nothing is yet (or only this
 * request's claim). A key claimed or stored for another request is IDEMPOTENCY_KEY_REUSED.
 */
export async function storedForJob(
  trx: Kysely<DB>,
  organizationId: string,
  keyed: KeyedJob,
  now: Date,
): Promise<StoredOutcome | null> {
  await repo.lockKey(trx, organizationId, keyed.scope, keyed.key);
  const stored = await repo.findLiveKey(trx, organizationId, keyed.scope, keyed.key, now);
  if (!stored) return null;
  if (stored.request_hash !== keyed.requestHash) throw new IdempotencyKeyReusedError();
  return stored.status_code === CLAIMED.statusCode ? null : (stored.response as unknown as StoredOutcome);
}

/** In the transaction that took the key's lock (`storedForJob`): stores the answer under the key. */
export function storeForJob(
  trx: Kysely<DB>,
  organizationId: string,
  keyed: KeyedJob,
  outcome: StoredOutcome,
  now: Date,
): Promise<void> {
  return repo.storeKey(trx, {
    organizationId,
    scope: keyed.scope,
    key: keyed.key,
    requestHash: keyed.requestHash,
    statusCode: outcome.statusCode,
    // With the claim's job: a replay names it (`X-Job-Id`) as the first answer did.
    response: JSON.stringify({ ...outcome, job: keyed.claim }),
    now,
    expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
  });
}

/**
 * Stores a refusal under the key in a transaction of its own, unless an answer is stored already
 * (the refusal came from a job whose transaction rolled back, or before its job was queued).
 */
export async function storeRefusal(
  db: Kysely<DB>,
  organizationId: string,
  keyed: KeyedJob,
  outcome: StoredOutcome,
  now: Date,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!(await storedForJob(trx, organizationId, keyed, now)))
      await storeForJob(trx, organizationId, keyed, outcome, now);
  });
}

/** Gives up the key's claim made for this request and this claim's job (a later claim of it stays). */
export function dropClaim(db: Kysely<DB>, organizationId: string, keyed: KeyedJob): Promise<void> {
  return repo.dropClaim(db, { organizationId, ...keyed });
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
          // A domain refusal is an answer too; what else is thrown stores nothing (refusalOutcome).
          const refused = refusalOutcome(error);
          if (!refused) throw error;
          outcome = refused;
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

    /**
     * For a request whose work a job does: the answer stored under its key (null: none yet, so
     * the job runs under the claim's id, or joins the one its earlier claim queued), and what the
     * job carries to store its own. A key claimed or stored for another request is
     * IDEMPOTENCY_KEY_REUSED. `joined`: the key was claimed already for this request.
     */
    async forJob(req: IdempotentRequest): Promise<{ stored: StoredOutcome | null; keyed: KeyedJob; joined: boolean }> {
      const requestHashed = requestHash(req.request);
      return db.transaction().execute(async (trx) => {
        const now = clock();
        await repo.lockKey(trx, req.organizationId, req.scope, req.key);
        const row = await repo.findLiveKey(trx, req.organizationId, req.scope, req.key, now);
        if (row && row.request_hash !== requestHashed) throw new IdempotencyKeyReusedError();
        const keyed = { scope: req.scope, key: req.key, requestHash: requestHashed };
        const outcome = row?.response as unknown as StoredOutcome | undefined;
        if (row && outcome && row.status_code !== CLAIMED.statusCode) {
          return { stored: outcome, keyed: { ...keyed, claim: outcome.job ?? '' }, joined: false };
        }
        // A retry of the claimed request joins the claim's job (queued, running, or kept). A new
        // claim (none yet, or the key expired or given up) names a job of its own: the job of an
        // earlier claim, kept past the key's 24 h, is not answered as this request's.
        if (row && typeof outcome?.job === 'string') {
          return { stored: null, keyed: { ...keyed, claim: outcome.job }, joined: true };
        }
        const claimed = { ...keyed, claim: `idem-${randomUUID()}` };
        await storeForJob(trx, req.organizationId, claimed, CLAIMED, now);
        return { stored: null, keyed: claimed, joined: false };
      });
    },

    /** Gives the key up when its job could not be queued or did not end with an answer: a retry runs again. */
    dropClaim(organizationId: string, keyed: KeyedJob): Promise<void> {
      return dropClaim(db, organizationId, keyed);
    },

    /** Stores a refusal made before a job was queued (the job stores its own answers). */
    storeRefusal(organizationId: string, keyed: KeyedJob, outcome: StoredOutcome): Promise<void> {
      return storeRefusal(db, organizationId, keyed, outcome, clock());
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
