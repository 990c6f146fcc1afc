import type { BudgetRow, DB, Kysely } from '@vouch/db';
import type { AmountInput, Budget, BudgetCheck, ListSpendsQuery, SetBudgetInput, SpendResult } from '@vouch/schemas';
import { findAgent } from '../agents/agents.repository.ts';
import type { AuditService } from '../audit/audit.service.ts';
import { auditMeta } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { EventsService } from '../events/events.service.ts';
import { screeningRefusal } from '../sanctions/sanctions.repository.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { idFromCursor, page } from '../shared/cursor.ts';
import {
  AgentNotFoundError,
  AgentNotRegisteredError,
  BudgetExceededError,
  BudgetNotFoundError,
  BudgetNotSetError,
  DomainError,
  ValidationError,
} from '../shared/errors.ts';
import { inTransaction } from '../shared/transaction.ts';
import { type BudgetState, dayStart, evaluateSpend, monthStart, windowsAt } from './budgets.model.ts';
import * as repo from './budgets.repository.ts';

export interface BudgetsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** Spends announce themselves and the thresholds they cross (docs/events.md); none without. */
  events?: EventsService | undefined;
  /** Percentages of a limit whose crossing is announced (budget.threshold), ascending. */
  budgetThresholds?: number[];
  cache?: ReadCache | undefined;
}

export function toState(row: BudgetRow, screening: BudgetState['screening']): BudgetState {
  return {
    screening,
    dailyLimit: BigInt(row.daily_limit),
    monthlyLimit: BigInt(row.monthly_limit),
    perTxLimit: BigInt(row.per_tx_limit),
    dailySpent: BigInt(row.daily_spent),
    monthlySpent: BigInt(row.monthly_spent),
    dailyHeld: BigInt(row.daily_held),
    monthlyHeld: BigInt(row.monthly_held),
    dayStart: row.day_start,
    monthStart: row.month_start,
  };
}

export function resets(now: Date) {
  const windows = windowsAt(now);
  return { dailyResetsAt: windows.nextDay / 1000, monthlyResetsAt: windows.nextMonth / 1000 };
}

const positive = (value: bigint) => (value > 0n ? value : 0n).toString();

/** A budget row as cached: with its amounts already parsed, since checks read it far more often than it changes. */
export interface CachedBudget {
  row: BudgetRow;
  state: BudgetState;
}

/** What the read cache keeps per agent: every organization's budget of it in every asset, parsed. */
type AgentBudgets = Map<string, CachedBudget>;
const budgetSlot = (organizationId: string, asset: string) => `${organizationId}/${asset}`;

export class SpendNotFoundError extends DomainError {
  constructor(id: string) {
    super('SPEND_NOT_FOUND', `no spend ${id} of this agent in this organization`);
  }
}

export function createBudgetsService({ db, clock, audit, events, budgetThresholds = [80, 100], cache }: BudgetsDeps) {
  /** The budget and its parsed state (or null), through the read cache when there is one and `executor` is `db`. */
  const budgetOf = async (
    key: repo.BudgetKey,
    fresh = false,
    executor: Kysely<DB> = db,
  ): Promise<CachedBudget | null> => {
    // A caller's transaction is read in, never beside: the cache loads through `db`, which on one
    // connection (PGlite) waits for that transaction, and would miss what it has written.
    if (!cache || fresh || executor !== db) {
      const row = await repo.findBudget(executor, key);
      return row ? { row, state: toState(row, row.screening) } : null;
    }
    const all = await cache.read('budgets', key.agent, async (): Promise<AgentBudgets> => {
      const { screening, rows } = await repo.findAgentBudgets(db, key.agent);
      return new Map(
        rows.map((row) => [budgetSlot(row.organization_id, row.asset), { row, state: toState(row, screening) }]),
      );
    });
    return all.get(budgetSlot(key.organizationId, key.asset)) ?? null;
  };

  function toBudget(row: BudgetRow, now: Date): Budget {
    // The figures of the limits and windows; whether a spend is allowed is the check's answer.
    const evaluation = evaluateSpend(toState(row, null), 0n, now);
    return {
      asset: row.asset,
      dailyLimit: row.daily_limit,
      dailySpent: evaluation.dailySpent.toString(),
      monthlyLimit: row.monthly_limit,
      monthlySpent: evaluation.monthlySpent.toString(),
      perTxLimit: row.per_tx_limit,
      dailyHeld: evaluation.dailyHeld.toString(),
      monthlyHeld: evaluation.monthlyHeld.toString(),
      dailyRemaining: evaluation.dailyRemaining.toString(),
      monthlyRemaining: evaluation.monthlyRemaining.toString(),
      ...resets(now),
      updatedAt: toUnixSeconds(row.updated_at),
    };
  }

  async function requireRegistered(executor: Kysely<DB>, address: string) {
    const agent = await findAgent(executor, address);
    if (!agent) throw new AgentNotFoundError(address);
    if (!agent.is_registered) throw new AgentNotRegisteredError(address);
    return agent;
  }

  const keyOf = (actor: Actor, agent: string, asset = ''): repo.BudgetKey => ({
    organizationId: actor.organizationId,
    agent,
    asset,
  });

  /** The answer of a check: the evaluation of `amount` against the budget (or NO_BUDGET without one). */
  function checkAnswer(budget: CachedBudget | null, amount: string, now: Date): BudgetCheck {
    if (!budget) {
      return {
        allowed: false,
        amount,
        dailyRemaining: '0',
        monthlyRemaining: '0',
        perTxLimit: null,
        reason: 'NO_BUDGET',
        ...resets(now),
      };
    }
    const evaluation = evaluateSpend(budget.state, BigInt(amount), now);
    return {
      allowed: evaluation.allowed,
      amount,
      dailyRemaining: evaluation.dailyRemaining.toString(),
      monthlyRemaining: evaluation.monthlyRemaining.toString(),
      perTxLimit: budget.row.per_tx_limit,
      reason: evaluation.reason,
      ...resets(now),
    };
  }

  /** After the commit of a change of the agent's budget: this process's next read sees it, and its events go out. */
  const changed = (address: string) => () => {
    cache?.invalidate('budgets', address);
    events?.committed();
  };

  /** What a statement that reserves from a budget announces (its event and the thresholds crossed); null when events are off. */
  function spendEvents(actor: Actor, now: Date): repo.SpendEvents | null {
    const meta = events?.meta(actor, now);
    return meta ? { ...meta, thresholds: budgetThresholds } : null;
  }

  return {
    budgetOf,
    checkAnswer,
    requireRegistered,
    spendEvents,
    changed,

    async get(actor: Actor, address: string, asset = ''): Promise<Budget> {
      const budget = await repo.findBudget(db, keyOf(actor, address, asset));
      if (!budget) {
        if (!(await findAgent(db, address))) throw new AgentNotFoundError(address);
        throw new BudgetNotFoundError(address);
      }
      return toBudget(budget, clock());
    },

    /**
     * First set needs dailyLimit and monthlyLimit (perTxLimit defaults to dailyLimit);
     * later sets change any subset and keep what has been spent and held. `executor` and
     * `afterCommit` as for `spend`.
     */
    async set(
      actor: Actor,
      address: string,
      input: SetBudgetInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Budget> {
      await requireRegistered(executor, address);
      const now = clock();
      const key = keyOf(actor, address, input.asset);
      const run = async (trx: Kysely<DB>) => {
        let row = await repo.updateLimits(trx, key, input, now);
        if (!row) {
          const missing = (['dailyLimit', 'monthlyLimit'] as const).filter((k) => input[k] === undefined);
          if (missing.length) {
            throw new ValidationError(
              missing.map((k) => ({ path: `body.${k}`, message: 'is required when the agent has no budget yet' })),
            );
          }
          row = await repo.insertBudget(
            trx,
            key,
            // perTxLimit defaults to dailyLimit in the insert only (see insertBudget).
            {
              dailyLimit: input.dailyLimit as string,
              monthlyLimit: input.monthlyLimit as string,
              perTxLimit: input.perTxLimit,
            },
            { day: dayStart(now), month: monthStart(now), now },
          );
        }
        await audit.append(
          trx,
          actor,
          'budget.set',
          address,
          {
            asset: key.asset,
            changed: Object.keys(input)
              .filter((k) => k !== 'asset')
              .sort(),
            dailyLimit: row.daily_limit,
            monthlyLimit: row.monthly_limit,
            perTxLimit: row.per_tx_limit,
          },
          now,
        );
        return row;
      };
      const row = await inTransaction(db, executor, run);
      // Read your own write: the next check in this process sees the new limits.
      afterCommit(() => cache?.invalidate('budgets', address));
      return toBudget(row, now);
    },

    /**
     * Advisory: would this amount be allowed now? Changes nothing. `fresh` bypasses the read
     * cache. A check naming a counterparty screens it as the spend would (one more read, past the
     * cache, only then).
     */
    async check(
      actor: Actor,
      address: string,
      input: AmountInput,
      options: { fresh?: boolean } = {},
    ): Promise<BudgetCheck> {
      const now = clock();
      let budget = await budgetOf(keyOf(actor, address, input.asset), options.fresh);
      if (!budget && !(await findAgent(db, address))) throw new AgentNotFoundError(address);
      if (budget && budget.state.screening === null && input.counterparty !== undefined) {
        const screening = await screeningRefusal(db, address, input.counterparty);
        if (screening !== null) budget = { ...budget, state: { ...budget.state, screening } };
      }
      return checkAnswer(budget, input.amount, now);
    },

    /**
     * Debits the budget if every limit holds, atomically. A refusal debits nothing,
     * stays in the ledger, and is thrown as BUDGET_EXCEEDED. `executor` lets an
     * idempotent request run the spend inside its own transaction, and `afterCommit` run what
     * must follow that commit.
     */
    async spend(
      actor: Actor,
      address: string,
      input: AmountInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<SpendResult> {
      const now = clock();
      const key = keyOf(actor, address, input.asset);
      const row = await repo.reserve(executor, 'spend', {
        ...key,
        amount: input.amount,
        counterparty: input.counterparty ?? null,
        day: dayStart(now),
        month: monthStart(now),
        now,
        audit: auditMeta(actor, now),
        events: spendEvents(actor, now),
      });
      if (!row) {
        await requireRegistered(executor, address);
        throw new BudgetNotSetError(address, key.asset);
      }
      // The counters changed: this process's next check must not see the old ones. Inside an
      // idempotent request the row is dropped once that transaction has committed. Its events
      // are fanned out to webhooks then.
      afterCommit(changed(address));
      const result: SpendResult = {
        allowed: row.last_refusal === null,
        amount: input.amount,
        spendId: row.spend_id as string,
        dailySpent: row.daily_spent,
        monthlySpent: row.monthly_spent,
        dailyRemaining: positive(BigInt(row.daily_limit) - BigInt(row.daily_spent) - BigInt(row.daily_held)),
        monthlyRemaining: positive(BigInt(row.monthly_limit) - BigInt(row.monthly_spent) - BigInt(row.monthly_held)),
        perTxLimit: row.per_tx_limit,
        reason: row.last_refusal as SpendResult['reason'],
        ...resets(now),
      };
      if (!result.allowed) {
        const { allowed: _allowed, ...details } = result;
        throw new BudgetExceededError({ ...details, reason: row.last_refusal as string });
      }
      return result;
    },

    /** The organization's ledger of the agent: spends, captures and refused attempts, newest first. */
    async listSpends(actor: Actor, address: string, query: ListSpendsQuery) {
      const rows = await repo.listSpends(
        db,
        {
          organizationId: actor.organizationId,
          agent: address,
          status: query.status,
          asset: query.asset,
          from: query.from === undefined ? undefined : new Date(query.from * 1000),
          to: query.to === undefined ? undefined : new Date(query.to * 1000),
          beforeId: query.cursor === undefined ? undefined : idFromCursor(query.cursor),
        },
        query.limit,
      );
      if (rows.length === 0 && !(await findAgent(db, address))) throw new AgentNotFoundError(address);
      const { items, nextCursor } = page(rows, query.limit);
      return {
        spends: items.map((r) => ({
          spendId: r.id,
          kind: r.kind,
          asset: r.asset,
          amount: r.amount,
          accepted: r.accepted,
          reason: r.reason,
          counterparty: r.counterparty,
          refunded: r.refunded,
          authorizationId: r.authorization_id,
          actorKeyId: r.actor_key_id,
          createdAt: toUnixSeconds(r.created_at),
        })),
        nextCursor,
      };
    },

    /**
     * Refunds an accepted spend (all of what is left, or `amount`): the budget gets it back in the
     * windows the spend counted in while they are the current ones; a refund never exceeds what
     * was spent, however many run at once.
     */
    async refund(
      actor: Actor,
      address: string,
      spendId: string,
      input: { amount?: string | undefined; reason?: string | undefined },
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      const now = clock();
      const spend = await repo.findSpend(executor, actor.organizationId, address, spendId);
      if (!spend) throw new SpendNotFoundError(spendId);
      const left = BigInt(spend.amount) - BigInt(spend.refunded);
      const refusal = !spend.accepted
        ? 'a refused attempt spent nothing to refund'
        : left === 0n
          ? 'the spend is already refunded in full'
          : input.amount !== undefined && BigInt(input.amount) > left
            ? `at most ${left} is left to refund`
            : null;
      const row =
        refusal === null
          ? await repo.refund(executor, {
              organizationId: actor.organizationId,
              agent: address,
              spendId,
              // None: what is left when the statement holds the spend (another refund may run now).
              amount: input.amount ?? null,
              reason: input.reason ?? null,
              day: dayStart(now),
              month: monthStart(now),
              now,
              audit: auditMeta(actor, now),
              events: events?.meta(actor, now),
            })
          : undefined;
      if (!row) {
        // Refused by the statement, not by the first read: another refund took what that read saw
        // left, and what is refunded now is read again.
        const seen =
          refusal === null
            ? ((await repo.findSpend(executor, actor.organizationId, address, spendId)) ?? spend)
            : spend;
        throw new DomainError(
          'REFUND_NOT_ALLOWED',
          `refund refused: ${refusal ?? 'another refund took what was left'}`,
          {
            spendId,
            amount: seen.amount,
            refunded: seen.refunded,
          },
        );
      }
      afterCommit(changed(address));
      return {
        refundId: row.refund_id,
        spendId: row.spend_id,
        amount: row.amount,
        refunded: row.refunded,
        restoredDaily: row.restored_daily,
        restoredMonthly: row.restored_monthly,
        createdAt: toUnixSeconds(row.created_at),
      };
    },
  };
}

export type BudgetsService = ReturnType<typeof createBudgetsService>;
