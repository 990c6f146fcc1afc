import type { AuthorizationRow, DB, Kysely } from '@vouch/db';
import type { Authorization, AuthorizationResult, AuthorizationState, AuthorizeInput } from '@vouch/schemas';
import { auditMeta } from '../audit/audit.service.ts';
import type { EventsService } from '../events/events.service.ts';
import type { ScreeningRefusal } from '../sanctions/sanctions.model.ts';
import { type Actor, systemActor } from '../shared/actor.ts';
import { type Clock, expiryAfter, toUnixSeconds } from '../shared/clock.ts';
import { idFromCursor, page } from '../shared/cursor.ts';
import { BudgetExceededError, BudgetNotSetError, DomainError } from '../shared/errors.ts';
import { statusAt } from '../shared/lapse.ts';
import { dayStart, monthStart } from './budgets.model.ts';
import * as repo from './budgets.repository.ts';
import type { BudgetsService } from './budgets.service.ts';
import { resets } from './budgets.service.ts';

export interface AuthorizationsDeps {
  db: Kysely<DB>;
  clock: Clock;
  budgets: BudgetsService;
  /** Holds, captures, voids and expiries announce themselves (docs/events.md); none without. */
  events?: EventsService | undefined;
}

/** How long a hold lasts when the caller does not say. */
export const DEFAULT_HOLD_SECONDS = 3600;
/** Holds one expiry statement releases at most. */
const EXPIRY_BATCH = 500;

export class AuthorizationNotFoundError extends DomainError {
  constructor(id: string) {
    super('AUTHORIZATION_NOT_FOUND', `no authorization ${id} of this agent in this organization`);
  }
}

/**
 * A hold as it is answered. Read at `now`, one past its `expiresAt` is `expired` at once, as its
 * capture is told, before the sweep gives back what it reserved (`releasedAt` null until then).
 */
export function toAuthorization(row: AuthorizationRow, now?: Date): Authorization {
  return {
    authorizationId: String(row.id),
    agent: row.agent,
    asset: row.asset,
    amount: row.amount,
    captured: row.captured,
    status: now === undefined ? row.status : statusAt(row, repo.LAPSING_HOLD, now),
    counterparty: row.counterparty,
    metadata: row.metadata,
    expiresAt: toUnixSeconds(row.expires_at),
    createdAt: toUnixSeconds(row.created_at),
    capturedAt: row.captured_at ? toUnixSeconds(row.captured_at) : null,
    releasedAt: row.released_at ? toUnixSeconds(row.released_at) : null,
    decisionId: row.decision_id === null ? null : String(row.decision_id),
  };
}

const positive = (value: bigint) => (value > 0n ? value : 0n).toString();

export function createAuthorizationsService({ db, clock, budgets, events }: AuthorizationsDeps) {
  const { changed } = budgets;

  /**
   * Releases a hold (`repo.release`), or says why it could not: not found, expired, a capture
   * larger than the hold, the sanctions screen (the statement's own answer), or the state the hold
   * is in (read after it). A hold that reads as releasable after a statement that found it not —
   * it was approved in between — is tried once more.
   */
  async function releaseOrRefuse(
    executor: Kysely<DB>,
    actor: Actor,
    address: string,
    id: string,
    kind: { status: 'captured'; capture: string | null; settled: boolean } | { status: 'voided' },
  ): Promise<{ row: repo.ReleaseRow; screening: ScreeningRefusal | null }> {
    const capture = kind.status === 'captured' ? kind.capture : null;
    for (let attempt = 1; ; attempt++) {
      const now = clock();
      const released = await repo.release(executor, {
        organizationId: actor.organizationId,
        agent: address,
        id,
        capture,
        status: kind.status,
        settled: kind.status === 'captured' && kind.settled,
        now,
        audit: auditMeta(actor, now),
        events: events?.meta(actor, now),
      });
      if (released.row) return { row: released.row, screening: released.screening };
      const { seen, screening } = released;
      if (!seen) throw new AuthorizationNotFoundError(id);
      // Held, unexpired and large enough when the statement ran: only its sanctions screen refused
      // (not a settled capture, which the screen does not refuse: the hold changed under it).
      const amount = capture ?? seen.amount;
      if (
        screening !== null &&
        !(kind.status === 'captured' && kind.settled) &&
        seen.status === 'held' &&
        seen.expiresAt.getTime() > now.getTime() &&
        BigInt(amount) <= BigInt(seen.amount)
      )
        throw new BudgetExceededError({ amount, authorizationId: id, reason: screening }, 'capture');
      const row = await repo.findAuthorization(executor, actor.organizationId, address, id);
      if (!row) throw new AuthorizationNotFoundError(id);
      if (row.status === 'held' && row.expires_at.getTime() <= now.getTime()) {
        throw new DomainError('AUTHORIZATION_NOT_HELD', `authorization ${id} expired at its expiresAt`, {
          status: 'expired',
          authorization: toAuthorization(row, now),
        });
      }
      if (row.status === 'held' && capture !== null && BigInt(capture) > BigInt(row.amount)) {
        throw new DomainError('CAPTURE_EXCEEDS_HOLD', `a capture of ${capture} exceeds the ${row.amount} held`, {
          held: row.amount,
        });
      }
      if (row.status !== 'held' || attempt === 2)
        throw new DomainError(
          'AUTHORIZATION_NOT_HELD',
          row.status === 'pending_approval'
            ? `authorization ${id} waits for its approval`
            : `authorization ${id} is ${row.status}, not held`,
          { status: row.status, authorization: toAuthorization(row) },
        );
    }
  }

  return {
    /**
     * A hold: reserves `amount` against every limit at once (one statement, like a spend), for
     * `expiresIn` seconds. Refused like a spend (422 BUDGET_EXCEEDED with the reason), and the
     * refusal stays in the ledger.
     */
    async authorize(
      actor: Actor,
      address: string,
      /** `expiresAt`: the end of what the hold is reserved for (an approval), to the millisecond, instead of `expiresIn`. */
      input: AuthorizeInput & { decisionId?: string | null; expiresAt?: Date },
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
      /** `pending_approval`: reserved while an approval is pending, not capturable until approved. */
      holdStatus: 'held' | 'pending_approval' = 'held',
    ): Promise<AuthorizationResult> {
      const now = clock();
      const asset = input.asset ?? '';
      const row = await repo.reserve(executor, 'hold', {
        organizationId: actor.organizationId,
        agent: address,
        asset,
        amount: input.amount,
        counterparty: input.counterparty ?? null,
        day: dayStart(now),
        month: monthStart(now),
        now,
        audit: auditMeta(actor, now),
        expiresAt: input.expiresAt ?? expiryAfter(now, (input.expiresIn ?? DEFAULT_HOLD_SECONDS) * 1000),
        metadata: input.metadata ?? null,
        decisionId: input.decisionId ?? null,
        holdStatus,
        events: budgets.spendEvents(actor, now),
      });
      if (!row) {
        await budgets.requireRegistered(executor, address);
        throw new BudgetNotSetError(address, asset);
      }
      afterCommit(changed(address));
      const dailyRemaining = positive(BigInt(row.daily_limit) - BigInt(row.daily_spent) - BigInt(row.daily_held));
      const monthlyRemaining = positive(
        BigInt(row.monthly_limit) - BigInt(row.monthly_spent) - BigInt(row.monthly_held),
      );
      if (row.last_refusal !== null || row.authorization_id === null) {
        throw new BudgetExceededError(
          {
            amount: input.amount,
            spendId: row.spend_id,
            dailySpent: row.daily_spent,
            monthlySpent: row.monthly_spent,
            dailyRemaining,
            monthlyRemaining,
            perTxLimit: row.per_tx_limit,
            reason: row.last_refusal as string,
            ...resets(now),
          },
          'hold',
        );
      }
      const hold = await repo.findAuthorization(executor, actor.organizationId, address, row.authorization_id);
      if (!hold) throw new Error(`authorization ${row.authorization_id} vanished after its insert`);
      return { ...toAuthorization(hold), dailyRemaining, monthlyRemaining };
    },

    /**
     * Captures `amount` of a hold (all of it when absent): the capture is spent in the hold's
     * windows and the rest released, once. A hold that is not held, has expired, or holds less is
     * refused and nothing changes.
     */
    async capture(
      actor: Actor,
      address: string,
      id: string,
      input: { amount?: string | undefined; settled?: boolean | undefined },
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      const { row, screening } = await releaseOrRefuse(executor, actor, address, id, {
        status: 'captured',
        capture: input.amount ?? null,
        settled: input.settled === true,
      });
      afterCommit(changed(address));
      return { authorization: toAuthorization(row), spendId: row.spend_id as string, screening };
    },

    /** Releases a hold without spending anything of it, once. */
    async void(
      actor: Actor,
      address: string,
      id: string,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Authorization> {
      const { row } = await releaseOrRefuse(executor, actor, address, id, { status: 'voided' });
      afterCommit(changed(address));
      return toAuthorization(row);
    },

    /** A hold, and what the sanctions screen would find if it were captured now. */
    async get(actor: Actor, address: string, id: string): Promise<AuthorizationState> {
      const row = await repo.findAuthorizationState(db, actor.organizationId, address, id);
      if (!row) throw new AuthorizationNotFoundError(id);
      return { ...toAuthorization(row, clock()), screening: row.screening };
    },

    async list(
      actor: Actor,
      address: string,
      query: { limit: number; cursor?: string | undefined; status?: Authorization['status'] | undefined },
    ) {
      const now = clock();
      const rows = await repo.listAuthorizations(
        db,
        { organizationId: actor.organizationId, agent: address },
        { status: query.status, now, beforeId: query.cursor === undefined ? undefined : idFromCursor(query.cursor) },
        query.limit,
      );
      const { items, nextCursor } = page(rows, query.limit);
      return { authorizations: items.map((row) => toAuthorization(row, now)), nextCursor };
    },

    /**
     * Expires every hold whose time has passed, organization by organization, in batches; each
     * hold is released once whatever else runs (a capture racing the sweep either wins or finds
     * the hold expired). Returns the expired holds.
     */
    async expireDue(): Promise<AuthorizationRow[]> {
      const now = clock();
      const expired: AuthorizationRow[] = [];
      for (const organizationId of await repo.organizationsWithDueHolds(db, now)) {
        for (;;) {
          const actor = systemActor(organizationId);
          const batch = await repo.expireHolds(db, now, EXPIRY_BATCH, auditMeta(actor, now), events?.meta(actor, now));
          expired.push(...batch);
          for (const agent of new Set(batch.map((h) => h.agent))) changed(agent)();
          if (batch.length < EXPIRY_BATCH) break;
        }
      }
      return expired;
    },
  };
}

export type AuthorizationsService = ReturnType<typeof createAuthorizationsService>;
