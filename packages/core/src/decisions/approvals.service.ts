import type { ApprovalRow, DB, Kysely } from '@vouch/db';
import type { Approval } from '@vouch/schemas';
import type { AuditService } from '../audit/audit.service.ts';
import { auditMeta } from '../audit/audit.service.ts';
import * as budgetsRepo from '../budgets/budgets.repository.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { EventsService } from '../events/events.service.ts';
import { type Actor, systemActor } from '../shared/actor.ts';
import { type Clock, expiryAfter, toUnixSeconds } from '../shared/clock.ts';
import { idFromCursor, page } from '../shared/cursor.ts';
import { DomainError, ForbiddenError } from '../shared/errors.ts';
import { statusAt } from '../shared/lapse.ts';
import { inTransaction } from '../shared/transaction.ts';
import * as repo from './decisions.repository.ts';

export interface ApprovalsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** Approvals announce what becomes of them (docs/events.md); none without. */
  events?: EventsService | undefined;
  cache?: ReadCache | undefined;
}

/** How long an approved grant may be redeemed when the approver does not say. */
export const DEFAULT_GRANT_SECONDS = 3600;
/** Approvals one transaction of the sweep expires at most. */
const EXPIRY_BATCH = 500;

export class ApprovalNotFoundError extends DomainError {
  constructor(id: string) {
    super('APPROVAL_NOT_FOUND', `no approval ${id} in this organization`);
  }
}

/**
 * An approval as it is answered. Read at `now`, a pending review or an unredeemed grant past its
 * `expiresAt` is `expired` at once, as approving or redeeming it is told, before the sweep marks it.
 */
export function toApproval(row: ApprovalRow, now?: Date): Approval {
  return {
    approvalId: String(row.id),
    status: now === undefined ? row.status : statusAt(row, repo.LAPSING_APPROVAL, now),
    decisionId: String(row.decision_id),
    agent: row.agent,
    amount: row.amount,
    asset: row.asset,
    counterparty: row.counterparty,
    category: row.category,
    authorizationId: row.authorization_id === null ? null : String(row.authorization_id),
    requestedByKeyId: row.requested_by_key_id,
    decidedByKeyId: row.decided_by_key_id,
    note: row.note,
    expiresAt: toUnixSeconds(row.expires_at),
    decidedAt: row.decided_at ? toUnixSeconds(row.decided_at) : null,
    redeemedAt: row.redeemed_at ? toUnixSeconds(row.redeemed_at) : null,
    createdAt: toUnixSeconds(row.created_at),
  };
}

/** What an approval is for, as its events carry it. */
const bound = (row: ApprovalRow) => ({
  decisionId: String(row.decision_id),
  amount: row.amount,
  asset: row.asset,
  counterparty: row.counterparty,
});

export function createApprovalsService({ db, clock, audit, events, cache }: ApprovalsDeps) {
  /** Why a decision on an approval cannot be taken: not found, or not pending. */
  async function refusal(actor: Actor, id: string, executor: Kysely<DB>): Promise<never> {
    const row = await repo.findApproval(executor, actor.organizationId, id);
    if (!row) throw new ApprovalNotFoundError(id);
    const approval = toApproval(row, clock());
    throw new DomainError('APPROVAL_NOT_PENDING', `approval ${id} is ${approval.status}, not pending`, {
      status: approval.status,
      approval,
    });
  }

  /** The key that asked for a review does not approve it: a second pair of eyes is the point. */
  async function assertNotRequester(actor: Actor, id: string, executor: Kysely<DB>) {
    const row = await repo.findApproval(executor, actor.organizationId, id);
    if (row && actor.keyId !== null && row.requested_by_key_id === actor.keyId) {
      throw new ForbiddenError('the key that asked for this review cannot decide it: use another approver');
    }
  }

  return {
    /**
     * The key that asked for the review is refused (403) before an Idempotency-Key is looked at:
     * the refusal is about that API key, not the request, and the organization's keys share their
     * Idempotency-Keys, so stored it would be replayed to an approver sending the same one.
     */
    assertNotRequester: (actor: Actor, id: string) => assertNotRequester(actor, id, db),

    async list(
      actor: Actor,
      query: {
        limit: number;
        cursor?: string | undefined;
        status?: Approval['status'] | undefined;
        agent?: string | undefined;
      },
    ) {
      const now = clock();
      const rows = await repo.listApprovals(
        db,
        actor.organizationId,
        {
          status: query.status,
          agent: query.agent,
          now,
          beforeId: query.cursor === undefined ? undefined : idFromCursor(query.cursor),
        },
        query.limit,
      );
      const { items, nextCursor } = page(rows, query.limit);
      return { approvals: items.map((row) => toApproval(row, now)), nextCursor };
    },

    async get(actor: Actor, id: string): Promise<Approval> {
      const row = await repo.findApproval(db, actor.organizationId, id);
      if (!row) throw new ApprovalNotFoundError(id);
      return toApproval(row, clock());
    },

    /**
     * Approves a pending review, once: a one-time grant for exactly its agent, counterparty, amount
     * and asset, redeemable until `expiresIn` seconds from now by a decision naming it; a hold
     * reserved for it becomes capturable until then. `executor` and `afterCommit`: an idempotent
     * request's transaction, and what runs once it has committed.
     */
    async approve(
      actor: Actor,
      id: string,
      input: { note?: string | undefined; expiresIn?: number | undefined },
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      await assertNotRequester(actor, id, executor);
      const now = clock();
      const grantExpiresAt = expiryAfter(now, (input.expiresIn ?? DEFAULT_GRANT_SECONDS) * 1000);
      const row = await inTransaction(db, executor, async (trx) => {
        const row = await repo.decideApproval(trx, {
          organizationId: actor.organizationId,
          id,
          status: 'approved',
          keyId: actor.keyId,
          note: input.note ?? null,
          now,
          grantExpiresAt,
        });
        if (!row) return undefined;
        if (row.authorization_id !== null)
          await repo.approveHold(trx, String(row.authorization_id), grantExpiresAt, now);
        const details = {
          approvalId: id,
          note: row.note,
          expiresAt: toUnixSeconds(grantExpiresAt),
          authorizationId: row.authorization_id,
        };
        await audit.append(trx, actor, 'approval.approved', row.agent, details, now);
        await events?.append(trx, actor, 'approval.approved', row.agent, { ...details, ...bound(row) }, now);
        return row;
      });
      if (!row) return refusal(actor, id, executor);
      afterCommit(() => events?.committed());
      return toApproval(row);
    },

    /** Denies a pending review, once; a hold reserved for it is released. `executor` and `afterCommit` as for `approve`. */
    async deny(
      actor: Actor,
      id: string,
      input: { note?: string | undefined },
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      await assertNotRequester(actor, id, executor);
      const now = clock();
      const row = await inTransaction(db, executor, async (trx) => {
        const row = await repo.decideApproval(trx, {
          organizationId: actor.organizationId,
          id,
          status: 'denied',
          keyId: actor.keyId,
          note: input.note ?? null,
          now,
          grantExpiresAt: null,
        });
        if (!row) return undefined;
        if (row.authorization_id !== null) {
          await budgetsRepo.release(trx, {
            organizationId: actor.organizationId,
            agent: row.agent,
            id: String(row.authorization_id),
            capture: null,
            status: 'voided',
            allowPending: true,
            now,
            audit: auditMeta(actor, now),
            events: events?.meta(actor, now),
          });
        }
        const details = { approvalId: id, note: row.note, authorizationId: row.authorization_id };
        await audit.append(trx, actor, 'approval.denied', row.agent, details, now);
        await events?.append(trx, actor, 'approval.denied', row.agent, { ...details, ...bound(row) }, now);
        return row;
      });
      if (!row) return refusal(actor, id, executor);
      afterCommit(() => {
        if (row.authorization_id !== null) cache?.invalidate('budgets', row.agent);
        events?.committed();
      });
      return toApproval(row);
    },

    /**
     * Pending approvals and unredeemed grants past their time expire, each with an audit entry and
     * an event of its organization: organization by organization, in batches of EXPIRY_BATCH,
     * each batch in a transaction of its own, so that a backlog (after a stop) neither holds an
     * organization's audit head for the whole sweep nor fails whole. Their holds expire with the
     * holds' own sweep.
     */
    async expireDue(): Promise<ApprovalRow[]> {
      const now = clock();
      const expired: ApprovalRow[] = [];
      for (const organizationId of await repo.organizationsWithDueApprovals(db, now)) {
        const actor = systemActor(organizationId);
        for (;;) {
          const batch = await db.transaction().execute(async (trx) => {
            const rows = await repo.expireApprovals(trx, now, organizationId, EXPIRY_BATCH);
            rows.sort((a, b) => Number(a.id) - Number(b.id));
            for (const row of rows) {
              const details = {
                approvalId: String(row.id),
                authorizationId: row.authorization_id,
                was: row.decided_at ? 'approved' : 'pending',
              };
              await audit.append(trx, actor, 'approval.expired', row.agent, details, now);
              await events?.append(trx, actor, 'approval.expired', row.agent, { ...details, ...bound(row) }, now);
            }
            return rows;
          });
          expired.push(...batch);
          if (batch.length > 0) events?.committed();
          if (batch.length < EXPIRY_BATCH) break;
        }
      }
      return expired;
    },
  };
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
