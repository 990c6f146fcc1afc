import type { BudgetRow, DB, Kysely } from '@vouch/db';
import type { Budget, BudgetCheck, SetBudgetInput, SpendResult } from '@vouch/schemas';
import { findAgent } from '../agents/agents.repository.ts';
import type { AuditService } from '../audit/audit.service.ts';
import { auditMeta } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import {
  AgentNotFoundError,
  AgentNotRegisteredError,
  BudgetExceededError,
  BudgetNotFoundError,
  BudgetNotSetError,
  ValidationError,
} from '../shared/errors.ts';
import { type BudgetState, dayStart, evaluateSpend, monthStart, windowsAt } from './budgets.model.ts';
import * as repo from './budgets.repository.ts';

export interface BudgetsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  cache?: ReadCache | undefined;
}

function toState(row: BudgetRow, sanctioned: boolean): BudgetState {
  return {
    sanctioned,
    dailyLimit: BigInt(row.daily_limit),
    monthlyLimit: BigInt(row.monthly_limit),
    perTxLimit: BigInt(row.per_tx_limit),
    dailySpent: BigInt(row.daily_spent),
    monthlySpent: BigInt(row.monthly_spent),
    dayStart: row.day_start,
    monthStart: row.month_start,
  };
}

function resets(now: Date) {
  const windows = windowsAt(now);
  return { dailyResetsAt: windows.nextDay / 1000, monthlyResetsAt: windows.nextMonth / 1000 };
}

/** A budget row as cached: with its amounts already parsed, since checks read it far more often than it changes. */
interface CachedBudget {
  row: BudgetRow;
  state: BudgetState;
}

/** What the read cache keeps per agent: every organization's budget of it, parsed. */
type AgentBudgets = Map<string, CachedBudget>;

export function createBudgetsService({ db, clock, audit, cache }: BudgetsDeps) {
  /** The organization's budget of the agent and its parsed state (or null), through the read cache when there is one. */
  const budgetOf = async (organizationId: string, address: string, fresh = false): Promise<CachedBudget | null> => {
    if (!cache || fresh) {
      const row = await repo.findBudget(db, organizationId, address);
      return row ? { row, state: toState(row, row.sanctioned) } : null;
    }
    const all = await cache.read('budgets', address, async (): Promise<AgentBudgets> => {
      const { sanctioned, rows } = await repo.findAgentBudgets(db, address);
      return new Map(rows.map((row) => [row.organization_id, { row, state: toState(row, sanctioned) }]));
    });
    return all.get(organizationId) ?? null;
  };

  function toBudget(row: BudgetRow, now: Date): Budget {
    // The figures of the limits and windows; whether a spend is allowed is the check's answer.
    const state = toState(row, false);
    const evaluation = evaluateSpend(state, 0n, now);
    return {
      dailyLimit: row.daily_limit,
      dailySpent: evaluation.dailySpent.toString(),
      monthlyLimit: row.monthly_limit,
      monthlySpent: evaluation.monthlySpent.toString(),
      perTxLimit: row.per_tx_limit,
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

  return {
    async get(actor: Actor, address: string): Promise<Budget> {
      const budget = await repo.findBudget(db, actor.organizationId, address);
      if (!budget) {
        if (!(await findAgent(db, address))) throw new AgentNotFoundError(address);
        throw new BudgetNotFoundError(address);
      }
      return toBudget(budget, clock());
    },

    /**
     * First set needs dailyLimit and monthlyLimit (perTxLimit defaults to dailyLimit);
     * later sets change any subset and keep what has been spent.
     */
    async set(actor: Actor, address: string, input: SetBudgetInput): Promise<Budget> {
      await requireRegistered(db, address);
      const now = clock();
      const org = actor.organizationId;
      const row = await db.transaction().execute(async (trx) => {
        let row = await repo.updateLimits(trx, org, address, input, now);
        if (!row) {
          const missing = (['dailyLimit', 'monthlyLimit'] as const).filter((k) => input[k] === undefined);
          if (missing.length) {
            throw new ValidationError(
              missing.map((k) => ({ path: `body.${k}`, message: 'is required when the agent has no budget yet' })),
            );
          }
          const dailyLimit = input.dailyLimit as string;
          row = await repo.insertBudget(
            trx,
            org,
            address,
            { dailyLimit, monthlyLimit: input.monthlyLimit as string, perTxLimit: input.perTxLimit ?? dailyLimit },
            { day: dayStart(now), month: monthStart(now), now },
          );
        }
        await audit.append(
          trx,
          actor,
          'budget.set',
          address,
          {
            changed: Object.keys(input).sort(),
            dailyLimit: row.daily_limit,
            monthlyLimit: row.monthly_limit,
            perTxLimit: row.per_tx_limit,
          },
          now,
        );
        return row;
      });
      // Read your own write: the next check in this process sees the new limits.
      cache?.invalidate('budgets', address);
      return toBudget(row, now);
    },

    /** Advisory: would this amount be allowed now? Changes nothing. `fresh` bypasses the read cache. */
    async check(
      actor: Actor,
      address: string,
      amount: string,
      options: { fresh?: boolean } = {},
    ): Promise<BudgetCheck> {
      const now = clock();
      const budget = await budgetOf(actor.organizationId, address, options.fresh);
      if (!budget) {
        if (!(await findAgent(db, address))) throw new AgentNotFoundError(address);
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
      amount: string,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<SpendResult> {
      const now = clock();
      const row = await repo.spend(executor, {
        agent: address,
        amount,
        day: dayStart(now),
        month: monthStart(now),
        now,
        audit: auditMeta(actor, now),
      });
      if (!row) {
        await requireRegistered(executor, address);
        throw new BudgetNotSetError(address);
      }
      // The counters changed: this process's next check must not see the old ones. Inside an
      // idempotent request the row is dropped once that transaction has committed.
      afterCommit(() => cache?.invalidate('budgets', address));
      const dailyRemaining = BigInt(row.daily_limit) - BigInt(row.daily_spent);
      const monthlyRemaining = BigInt(row.monthly_limit) - BigInt(row.monthly_spent);
      const result: SpendResult = {
        allowed: row.last_refusal === null,
        amount,
        spendId: row.spend_id,
        dailySpent: row.daily_spent,
        monthlySpent: row.monthly_spent,
        dailyRemaining: (dailyRemaining > 0n ? dailyRemaining : 0n).toString(),
        monthlyRemaining: (monthlyRemaining > 0n ? monthlyRemaining : 0n).toString(),
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
  };
}

export type BudgetsService = ReturnType<typeof createBudgetsService>;
