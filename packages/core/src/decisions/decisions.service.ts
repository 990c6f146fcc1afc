import { type DB, type DecisionRow, isDatabaseBusy, isDatabaseUnavailable, type Kysely } from '@vouch/db';
import type { Authorization, Decision, DecisionInput, DecisionReason, ListDecisionsQuery } from '@vouch/schemas';
import { gradeFor } from '../agents/agents.model.ts';
import { findAgent } from '../agents/agents.repository.ts';
import type { AgentsService } from '../agents/agents.service.ts';
import type { AnomalyService } from '../anomaly/anomaly.service.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { AuthorizationsService } from '../budgets/authorizations.service.ts';
import { toAuthorization } from '../budgets/authorizations.service.ts';
import { releaseHold } from '../budgets/budgets.model.ts';
import * as budgetsRepo from '../budgets/budgets.repository.ts';
import type { BudgetsService, CachedBudget } from '../budgets/budgets.service.ts';
import type { EventsService } from '../events/events.service.ts';
import type { SanctionsService } from '../sanctions/sanctions.service.ts';
import { confidenceOf, SCORE_MODEL_VERSION } from '../scores/scores.model.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, expiryAfter, toUnixSeconds } from '../shared/clock.ts';
import { cursorNotIssued, cursorText, encodeCursor } from '../shared/cursor.ts';
import { AgentNotFoundError, BudgetExceededError, DomainError } from '../shared/errors.ts';
import { timeOrderedId } from '../shared/ids.ts';
import { decide, type SanctionsState, type Verdict } from './decisions.model.ts';
import * as repo from './decisions.repository.ts';
import type { PoliciesService } from './policies.service.ts';
import { evaluatePolicy, type PolicyFacts } from './policy.model.ts';

export interface DecisionsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** A review announces the approval it asks for (approval.requested); none without. */
  events?: EventsService | undefined;
  agents: AgentsService;
  budgets: BudgetsService;
  authorizations: AuthorizationsService;
  policies: PoliciesService;
  sanctions: SanctionsService;
  anomaly: AnomalyService;
  /** How long a review waits for its approval (and any hold reserved meanwhile) before it expires. */
  approvalTtlMs: number;
}

export class DecisionNotFoundError extends DomainError {
  constructor(id: string) {
    super('DECISION_NOT_FOUND', `no decision ${id} in this organization`);
  }
}

/** What a stored decision saw, besides its inputs: enough to answer it again as it was. */
interface DecisionFacts {
  score: number | null;
  confidence: number | null;
  sanctions: Decision['sanctions'];
  budget: Decision['budget'];
  policy: Decision['policy'];
  modelVersion: string;
  /** The `approvalId` the request named, kept with its inputs whether or not it was redeemed (absent: none). */
  approvalIdGiven?: string;
  /** The hold as the decision answered it (absent in rows stored before it was kept: the hold as it is now). */
  authorization?: Authorization | null;
}

const DAY_MS = 86_400_000;

/** A page of decisions ends at one: its time (ms) and id, opaque to the caller. */
const decisionCursor = (row: DecisionRow) => encodeCursor(`${row.created_at.getTime()}_${row.id}`);

function fromDecisionCursor(cursor: string): { createdAt: Date; id: string } {
  const match = /^(\d{1,15})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(cursorText(cursor));
  if (!match) throw cursorNotIssued();
  return { createdAt: new Date(Number(match[1])), id: match[2] as string };
}

/** The budget as if `hold` were given back, nothing of it spent (as a void gives it back). */
function withoutHold(budget: CachedBudget, hold: { amount: string; day_start: Date; month_start: Date }): CachedBudget {
  const released = { amount: BigInt(hold.amount), dayStart: hold.day_start, monthStart: hold.month_start };
  return { ...budget, state: releaseHold(budget.state, released, 0n) };
}

/**
 * The sanctions a decision stores and answers once a budget refusal found what its screening did
 * not: the list changed between the screening and the budget's read (or the hold's statement).
 */
function sanctionsFoundByBudget(
  sanctions: Decision['sanctions'],
  refusal: string | null,
  counterparty: string | null,
): Decision['sanctions'] {
  if (refusal === 'SANCTIONED') return { ...sanctions, agent: 'listed' };
  if (refusal === 'COUNTERPARTY_SANCTIONED') return { ...sanctions, counterparty: 'listed' };
  if (refusal === 'SANCTIONS_LIST_UNAVAILABLE') {
    return { agent: 'unavailable', counterparty: counterparty === null ? null : 'unavailable', list: null };
  }
  return sanctions;
}

export function createDecisionsService(deps: DecisionsDeps) {
  const { db, clock, audit, events, agents, budgets, authorizations, policies, sanctions, anomaly } = deps;
  const writer = batchWriter<repo.NewDecision>((batch) => repo.insertDecisions(db, batch));

  /** A decision's answer from what is stored of it. */
  function answer(d: repo.NewDecision, hold: Authorization | null, approvalId: string | null): Decision {
    const facts = d.facts as DecisionFacts;
    if (facts.authorization !== undefined) hold = facts.authorization;
    return {
      decisionId: d.id,
      decision: d.decision,
      reasons: d.reasons as DecisionReason[],
      agent: d.agent,
      amount: d.amount,
      asset: d.asset,
      counterparty: d.counterparty,
      category: d.category,
      score: facts.score,
      grade: facts.score === null ? null : gradeFor(facts.score),
      confidence: facts.confidence,
      sanctions: facts.sanctions,
      budget: facts.budget,
      policy: facts.policy,
      modelVersion: facts.modelVersion,
      authorization: hold,
      approvalId,
      createdAt: toUnixSeconds(d.now),
    };
  }

  function toDecision(row: DecisionRow, hold: Authorization | null): Decision {
    return answer(
      {
        id: row.id,
        organizationId: row.organization_id,
        agent: row.agent,
        amount: row.amount,
        asset: row.asset,
        counterparty: row.counterparty,
        category: row.category,
        context: row.context,
        decision: row.decision,
        reasons: row.reasons,
        facts: row.facts,
        authorizationId: row.authorization_id,
        approvalId: row.approval_id,
        actorKeyId: row.actor_key_id,
        requestId: row.request_id,
        now: row.created_at,
      },
      hold,
      row.approval_id === null ? null : String(row.approval_id),
    );
  }

  /** Why an approval cannot be redeemed for this payment. */
  async function approvalProblem(
    executor: Kysely<DB>,
    actor: Actor,
    id: string,
    input: DecisionInput,
    asset: string,
    now: Date,
  ) {
    const a = await repo.findApproval(executor, actor.organizationId, id);
    if (!a) return `approval ${id} is not known in this organization`;
    if (a.status !== 'approved') return `approval ${id} is ${a.status}, not approved`;
    if (a.expires_at.getTime() <= now.getTime()) return `approval ${id} expired`;
    const bound =
      a.agent === input.agent &&
      a.amount === input.amount &&
      a.asset === asset &&
      a.counterparty === (input.counterparty ?? null) &&
      a.category === (input.category ?? null);
    return bound
      ? `approval ${id} was taken by another decision`
      : `approval ${id} was granted for another payment (agent, counterparty, amount, asset and category must match)`;
  }

  /** A stored decision's answer; a row stored before its hold was kept with it reads the hold as it is now. */
  async function stored(actor: Actor, row: DecisionRow): Promise<Decision> {
    const hold =
      row.authorization_id === null || (row.facts as unknown as DecisionFacts).authorization !== undefined
        ? null
        : await budgetsRepo.findAuthorization(db, actor.organizationId, row.agent, String(row.authorization_id));
    return toDecision(row, hold ? toAuthorization(hold, clock()) : null);
  }

  const service = {
    /**
     * One answer before money moves: the agent's score and confidence, the sanctions of the agent,
     * its owner and the counterparty, the organization's policy and budget. Synchronous; stored
     * with what it saw. With `hold` an allow also holds the amount, and a review reserves it while
     * the approval is pending, in the same transaction as the decision.
     */
    async decide(
      actor: Actor,
      input: DecisionInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Decision> {
      // A hold: its policy read, its payments counted (velocity, counterpartyCap) and the hold made
      // in one transaction under the agent's lock. Otherwise two at once would each count without
      // the other and both hold; and a hold decided under a policy that counts nothing, still in
      // flight when one that counts is put, would not be counted by the first decision under it.
      // The lock comes first, whatever the policy; everything below, the policy included, is then
      // read in the transaction (past the read cache).
      if (input.hold && !executor.isTransaction) {
        const effects: Array<() => void> = [];
        const decided = await db
          .transaction()
          .execute((trx) => service.decide(actor, input, trx, (effect) => effects.push(effect)));
        for (const effect of effects) effect();
        return decided;
      }
      if (input.hold) await repo.lockPaymentCount(executor, actor.organizationId, input.agent);
      const now = clock();
      const asset = input.asset ?? '';
      const counterparty = input.counterparty ?? null;
      const amount = BigInt(input.amount);
      // Inside a caller's transaction (an Idempotency-Key) everything is read in it, past the
      // read cache: the embedded database has one connection, which that transaction holds.
      const inTransaction = executor.isTransaction;
      const reader = inTransaction ? executor : db;
      const grant: repo.GrantRequest | null =
        input.approvalId === undefined
          ? null
          : {
              organizationId: actor.organizationId,
              id: input.approvalId,
              agent: input.agent,
              amount: input.amount,
              asset,
              counterparty,
              category: input.category ?? null,
              now,
            };
      const [standing, cpStanding, budget, policy, ownHold] = await Promise.all([
        agents.standingOf(input.agent, inTransaction, reader),
        counterparty ? agents.standingOf(counterparty, inTransaction, reader) : Promise.resolve(null),
        budgets.budgetOf({ organizationId: actor.organizationId, agent: input.agent, asset }, inTransaction, reader),
        policies.effective(actor.organizationId, input.agent, reader),
        grant === null ? Promise.resolve(undefined) : repo.grantHold(reader, grant),
      ]);
      const screening = await sanctions.forDecision(input.agent, standing?.owner ?? null, counterparty, reader);
      const standingOf = (s: typeof standing) =>
        s && {
          score: s.score,
          grade: gradeFor(s.score),
          confidence: confidenceOf(s.evidence, s.firstSeenAt, now).confidence,
        };
      const agentStanding = standingOf(standing);
      // A grant redeemed with its hold already reserved pays with that hold, which is this payment:
      // the budget, velocity and the counterparty's total are judged without it, not with it twice.
      // The hold already counts in the windows it was made in, as its capture would: the day or
      // month limit does not refuse it again (a hold made before midnight, redeemed after it, is
      // not this day's). Sanctions and the per-payment limit, judged first, still do.
      const judge = (b: CachedBudget | null) => {
        const judged = budgets.checkAnswer(b, input.amount, now);
        return ownHold && (judged.reason === 'DAILY_LIMIT' || judged.reason === 'MONTHLY_LIMIT')
          ? { ...judged, allowed: true, reason: null }
          : judged;
      };
      const judgedBudget = budget && ownHold ? withoutHold(budget, ownHold) : budget;
      const check = judge(judgedBudget);
      // The budget's sanctions screen refuses before any limit is weighed: the limits are judged
      // on their own too, so that a payment both refuse is told both.
      const limitCheck =
        judgedBudget && judgedBudget.state.screening !== null
          ? judge({ ...judgedBudget, state: { ...judgedBudget.state, screening: null } })
          : null;
      const exceptHold = ownHold?.id ?? null;
      const since = (seconds: number) => new Date(now.getTime() - seconds * 1000);
      const facts: PolicyFacts = {
        amount,
        asset,
        counterparty,
        category: input.category ?? null,
        now,
        agent: agentStanding ?? { score: 0, grade: 'D', confidence: 0 },
        counterpartyAgent: standingOf(cpStanding),
        counterpartySanctioned: screening.counterparty,
        velocity: (s) => repo.velocity(reader, actor.organizationId, input.agent, since(s), now, exceptHold),
        toCounterparty: (s) =>
          counterparty === null
            ? Promise.resolve(0n)
            : repo.toCounterparty(
                reader,
                actor.organizationId,
                input.agent,
                asset,
                counterparty,
                since(s),
                now,
                exceptHold,
              ),
        anomalySeverity: async () =>
          (
            await anomaly.assess(
              { agent: input.agent, amount: input.amount, asset, type: 0, counterparty: input.counterparty },
              now,
              reader,
            )
          ).severity,
      };
      const outcome = await evaluatePolicy(policy?.rules ?? null, facts);
      const evidence = {
        agent: { known: standing !== null, registered: standing?.isRegistered ?? false },
        sanctions: {
          listAvailable: screening.list !== null,
          agent: screening.agent,
          owner: screening.owner,
          counterparty: screening.counterparty,
        },
        budget: { allowed: check.allowed, reason: check.reason, limit: limitCheck?.reason ?? null },
        policy: outcome,
        approval: null,
      };
      const state = (listed: boolean): SanctionsState =>
        screening.list === null ? 'unavailable' : listed ? 'listed' : 'clear';
      const stored: DecisionFacts = {
        score: standing?.score ?? null,
        confidence: agentStanding?.confidence ?? null,
        sanctions: {
          agent: state(screening.agent || screening.owner),
          counterparty: counterparty === null ? null : state(screening.counterparty),
          list: screening.list,
        },
        budget: {
          allowed: check.allowed,
          reason: check.reason,
          dailyRemaining: check.dailyRemaining,
          monthlyRemaining: check.monthlyRemaining,
          perTxLimit: check.perTxLimit,
        },
        policy: {
          agent: policy?.agent ?? null,
          version: policy?.version ?? null,
          matchedRule: outcome.kind === 'matched' ? outcome.rule.name : null,
        },
        modelVersion: SCORE_MODEL_VERSION,
        ...(input.approvalId !== undefined && { approvalIdGiven: input.approvalId }),
      };
      // The budget row carries its own screening, read at another moment than the list.
      stored.sanctions = sanctionsFoundByBudget(stored.sanctions, check.reason, counterparty);

      const write = async (trx: Kysely<DB>, after: (effect: () => void) => void) => {
        let verdict = decide(evidence);
        let approvalHold: string | null = null;
        // True only once redeemApproval took the grant: nothing else may claim or record a redemption.
        let redeemed = false;
        // An approval answers a review; it is spent only when nothing else refuses the payment.
        if (grant !== null) {
          const prospective = decide({ ...evidence, approval: { redeemed: true, id: grant.id } });
          if (prospective.decision === 'allow') {
            const taken = await repo.redeemApproval(trx, grant);
            if (taken) {
              verdict = prospective;
              // The grant's own hold pays for it while it is still held; one voided or expired since
              // is gone, and a payment that asks for a hold reserves a new one. Its state is read
              // again here, after the redemption: a hold approved (so held) or voided since the
              // first read is taken as it now is, so that a grant never leaves two payable holds.
              approvalHold =
                taken.authorization_id === null
                  ? null
                  : await repo.liveHold(trx, actor.organizationId, String(taken.authorization_id), now);
              redeemed = true;
              // The budget was judged without the grant's hold, and its day and month limits waived,
              // because that hold pays. One voided or expired since the first read pays nothing: the
              // payment is judged again as any other, and a refusal gives the grant back.
              if (ownHold && approvalHold === null) {
                const plain = budgets.checkAnswer(budget, input.amount, now);
                if (!plain.allowed) {
                  verdict = decide({ ...evidence, budget: { allowed: false, reason: plain.reason } });
                  stored.budget = {
                    allowed: false,
                    reason: plain.reason,
                    dailyRemaining: plain.dailyRemaining,
                    monthlyRemaining: plain.monthlyRemaining,
                    perTxLimit: plain.perTxLimit,
                  };
                  await repo.unredeemApproval(trx, actor.organizationId, grant.id);
                  redeemed = false;
                }
              }
            } else {
              verdict = decide({
                ...evidence,
                approval: {
                  redeemed: false,
                  problem: await approvalProblem(trx, actor, grant.id, input, asset, now),
                },
              });
            }
          }
          // Else something else denies: the grant is left as it was, and the answer does not claim it.
        }
        // The hold, made before the decision's row so that a budget that changed since the check decides.
        let holdId: string | null = approvalHold;
        const reserve = async (status: 'held' | 'pending_approval', expiresAt: Date): Promise<string | null> => {
          try {
            const hold = await authorizations.authorize(
              actor,
              input.agent,
              {
                amount: input.amount,
                asset: input.asset,
                counterparty: input.counterparty,
                // The very time of what it is reserved for: seconds from a fraction of a second
                // would round up once more, and a review's hold outlive its approval by a second.
                expiresAt,
              },
              trx,
              after,
              status,
            );
            return hold.authorizationId;
          } catch (error) {
            if (!(error instanceof BudgetExceededError)) throw error;
            const details = error.details as {
              reason: string;
              dailyRemaining?: string;
              monthlyRemaining?: string;
              perTxLimit?: string | null;
            };
            const refusal = details.reason;
            verdict = decide({ ...evidence, budget: { allowed: false, reason: refusal as never } });
            // What is stored and answered is what the hold's own statement found, not the check before it.
            stored.budget = {
              allowed: false,
              reason: refusal,
              dailyRemaining: details.dailyRemaining ?? check.dailyRemaining,
              monthlyRemaining: details.monthlyRemaining ?? check.monthlyRemaining,
              perTxLimit: details.perTxLimit !== undefined ? details.perTxLimit : check.perTxLimit,
            };
            stored.sanctions = sanctionsFoundByBudget(stored.sanctions, refusal, counterparty);
            // A grant redeemed for this payment is not spent on a refusal.
            if (redeemed && grant !== null) {
              await repo.unredeemApproval(trx, actor.organizationId, grant.id);
              redeemed = false;
            }
            return null;
          }
        };
        const approvalExpires = expiryAfter(now, deps.approvalTtlMs);
        if (input.hold && verdict.decision === 'allow' && holdId === null) {
          holdId = await reserve('held', expiryAfter(now, (input.expiresIn ?? 3600) * 1000));
        } else if (input.hold && verdict.decision === 'review') {
          holdId = await reserve('pending_approval', approvalExpires);
        }

        const decisionId = record.id;
        // The hold as it is answered, kept with the decision: its GET answers it as it was, not as it is now.
        const held =
          holdId === null ? null : await budgetsRepo.findAuthorization(trx, actor.organizationId, input.agent, holdId);
        stored.authorization = held ? { ...toAuthorization(held), ...(approvalHold === null && { decisionId }) } : null;
        // The approval the decision redeemed. One it was given and did not redeem (another
        // organization's, another payment's, or not needed) is kept only in its facts
        // (approvalIdGiven) and, when only it stood in the way, in its APPROVAL_INVALID reason.
        const redeemedId = redeemed && grant !== null ? grant.id : null;
        await repo.insertDecisions(trx, [
          {
            ...record,
            decision: verdict.decision,
            reasons: verdict.reasons,
            authorizationId: holdId,
            approvalId: redeemedId,
          },
        ]);
        if (holdId !== null && approvalHold === null) await repo.linkAuthorizationToDecision(trx, holdId, decisionId);
        if (redeemed && grant !== null) {
          await repo.setRedeemedDecision(trx, actor.organizationId, grant.id, decisionId);
          await audit.append(trx, actor, 'approval.redeemed', input.agent, { approvalId: grant.id, decisionId }, now);
        }
        let approvalId: string | null = null;
        if (verdict.decision === 'review') {
          const approval = await repo.insertApproval(trx, {
            organizationId: actor.organizationId,
            agent: input.agent,
            decisionId,
            amount: input.amount,
            asset,
            counterparty,
            category: input.category ?? null,
            authorizationId: holdId,
            requestedByKeyId: actor.keyId,
            expiresAt: approvalExpires,
            now,
          });
          approvalId = approval.id;
          await repo.linkDecision(trx, decisionId, { approvalId });
          const requested = {
            approvalId,
            decisionId,
            amount: input.amount,
            asset,
            counterparty,
            authorizationId: holdId,
          };
          await audit.append(trx, actor, 'approval.requested', input.agent, requested, now);
          await events?.append(
            trx,
            actor,
            'approval.requested',
            input.agent,
            { ...requested, category: input.category ?? null, expiresAt: toUnixSeconds(approvalExpires) },
            now,
          );
          after(() => events?.committed());
        }
        return answer(
          { ...record, decision: verdict.decision, reasons: verdict.reasons },
          stored.authorization ?? null,
          approvalId ?? redeemedId,
        );
      };

      const record: repo.NewDecision = {
        // Time-ordered (UUIDv7): each new row lands at the right edge of the primary key's index
        // instead of on a random page of it, which a growing log pays for in reads and WAL.
        id: timeOrderedId(),
        organizationId: actor.organizationId,
        agent: input.agent,
        amount: input.amount,
        asset,
        counterparty,
        category: input.category ?? null,
        context: input.context ?? null,
        decision: 'deny',
        reasons: [],
        facts: stored,
        authorizationId: null,
        approvalId: null,
        actorKeyId: actor.keyId,
        requestId: actor.requestId ?? null,
        now,
      };
      // The common case — no hold, no approval, no review, no key's transaction — is stored by
      // the batch writer: many decisions in one statement, each answered once its batch commits.
      if (!executor.isTransaction && !input.hold && input.approvalId === undefined) {
        const verdict = decide(evidence);
        if (verdict.decision !== 'review') {
          const stored = { ...record, decision: verdict.decision, reasons: verdict.reasons };
          await writer.write(stored);
          return answer(stored, null, null);
        }
      }
      if (executor.isTransaction) return write(executor, afterCommit);
      // Effects of the decision's own transaction (the cache's drop, the events' fan-out) run once it has committed.
      const effects: Array<() => void> = [];
      const decided = await db.transaction().execute((trx) => write(trx, (effect) => effects.push(effect)));
      for (const effect of effects) effect();
      return decided;
    },

    async get(actor: Actor, id: string): Promise<Decision> {
      const row = await repo.findDecision(db, actor.organizationId, id);
      if (!row) throw new DecisionNotFoundError(id);
      return stored(actor, row);
    },

    /** The agent's decisions in the organization, newest first, each answered as `get` answers it. */
    async list(actor: Actor, agent: string, query: ListDecisionsQuery) {
      const rows = await repo.listDecisions(
        db,
        {
          organizationId: actor.organizationId,
          agent,
          decision: query.decision,
          from: query.from === undefined ? undefined : new Date(query.from * 1000),
          to: query.to === undefined ? undefined : new Date(query.to * 1000),
          after: query.cursor === undefined ? undefined : fromDecisionCursor(query.cursor),
        },
        query.limit,
      );
      // An address Vouch never saw, and never decided about here, is not known (decisions are
      // made about unknown addresses too: those are listed).
      if (
        rows.length === 0 &&
        !(await findAgent(db, agent)) &&
        !(await repo.anyDecision(db, actor.organizationId, agent))
      )
        throw new AgentNotFoundError(agent);
      const items = rows.slice(0, query.limit);
      const last = items[items.length - 1];
      return {
        decisions: await Promise.all(items.map((row) => stored(actor, row))),
        nextCursor: rows.length > query.limit && last ? decisionCursor(last) : null,
      };
    },
  };
  return service;
}

/**
 * Stores rows many per statement: a write waits for the statement that carries it to commit. The
 * first write of an idle moment goes at once (next turn of the event loop); writes that arrive
 * while `inFlight` statements run join the next one. A statement that fails for anything but the
 * database being away or busy is retried row by row, so one bad row fails only its own write.
 */
export function batchWriter<T>(
  insert: (rows: T[]) => Promise<void>,
  options: { maxBatch?: number; inFlight?: number } = {},
) {
  const maxBatch = options.maxBatch ?? 500;
  const maxInFlight = options.inFlight ?? 4;
  let queue: Array<{ row: T; resolve: () => void; reject: (error: unknown) => void }> = [];
  let running = 0;
  let scheduled = false;
  const run = async (batch: typeof queue) => {
    try {
      await insert(batch.map((b) => b.row));
      for (const b of batch) b.resolve();
    } catch (error) {
      // Away or busy (a statement or lock timeout), rows one by one would only wait it out again each.
      if (batch.length === 1 || isDatabaseUnavailable(error) || isDatabaseBusy(error)) {
        for (const b of batch) b.reject(error);
        return;
      }
      for (const b of batch) await insert([b.row]).then(b.resolve, b.reject);
    }
  };
  const flush = () => {
    scheduled = false;
    while (queue.length && running < maxInFlight) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      running++;
      void run(batch).finally(() => {
        running--;
        schedule();
      });
    }
  };
  function schedule() {
    if (scheduled || queue.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  }
  return {
    write(row: T): Promise<void> {
      return new Promise((resolve, reject) => {
        queue.push({ row, resolve, reject });
        schedule();
      });
    },
  };
}

export type DecisionsService = ReturnType<typeof createDecisionsService>;
export type { Verdict };
export const APPROVAL_TTL_DEFAULT_MS = DAY_MS;
