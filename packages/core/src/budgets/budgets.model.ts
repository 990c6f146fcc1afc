/** Budget rules: calendar windows in UTC and the evaluation of one prospective spend. */

export type RefusalReason = 'SANCTIONED' | 'PER_TX_LIMIT' | 'DAILY_LIMIT' | 'MONTHLY_LIMIT' | 'NO_BUDGET';

/** The UTC day and month containing an instant, and when each ends, in epoch milliseconds. */
export interface Windows {
  readonly day: number;
  readonly nextDay: number;
  readonly month: number;
  readonly nextMonth: number;
}

// The last day's windows: every request of a day asks for the same ones.
let lastWindows: Windows = { day: 0, nextDay: 0, month: 0, nextMonth: 0 };

export function windowsAt(now: Date): Windows {
  const t = now.getTime();
  if (t >= lastWindows.day && t < lastWindows.nextDay) return lastWindows;
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  // Shared by every caller of the day: frozen.
  lastWindows = Object.freeze({
    day: Date.UTC(y, m, d),
    nextDay: Date.UTC(y, m, d + 1),
    month: Date.UTC(y, m, 1),
    nextMonth: Date.UTC(y, m + 1, 1),
  });
  return lastWindows;
}

export const dayStart = (now: Date): Date => new Date(windowsAt(now).day);
export const nextDayStart = (now: Date): Date => new Date(windowsAt(now).nextDay);
export const monthStart = (now: Date): Date => new Date(windowsAt(now).month);
export const nextMonthStart = (now: Date): Date => new Date(windowsAt(now).nextMonth);

export interface BudgetState {
  dailyLimit: bigint;
  monthlyLimit: bigint;
  perTxLimit: bigint;
  dailySpent: bigint;
  monthlySpent: bigint;
  /** Start of the window `dailySpent` belongs to. */
  dayStart: Date;
  monthStart: Date;
  /** The agent or its owner is on the active sanctions list: nothing may be spent. */
  sanctioned: boolean;
}

/**
 * Spent amounts in the windows that contain `now`. A counter whose window has
 * passed counts as zero; a window recorded later than `now` (a replica whose clock
 * runs ahead) is kept, so windows only move forward.
 */
export function currentSpent(state: BudgetState, now: Date): { daily: bigint; monthly: bigint } {
  const windows = windowsAt(now);
  return {
    daily: state.dayStart.getTime() >= windows.day ? state.dailySpent : 0n,
    monthly: state.monthStart.getTime() >= windows.month ? state.monthlySpent : 0n,
  };
}

const remaining = (limit: bigint, spent: bigint) => (limit > spent ? limit - spent : 0n);

export interface Evaluation {
  allowed: boolean;
  reason: RefusalReason | null;
  dailySpent: bigint;
  monthlySpent: bigint;
  dailyRemaining: bigint;
  monthlyRemaining: bigint;
}

/** Whether `amount` may be spent now; a sanctioned agent never, else the first limit that fails is the reason. */
export function evaluateSpend(state: BudgetState, amount: bigint, now: Date): Evaluation {
  const spent = currentSpent(state, now);
  let reason: RefusalReason | null = null;
  if (state.sanctioned) reason = 'SANCTIONED';
  else if (amount > state.perTxLimit) reason = 'PER_TX_LIMIT';
  else if (spent.daily + amount > state.dailyLimit) reason = 'DAILY_LIMIT';
  else if (spent.monthly + amount > state.monthlyLimit) reason = 'MONTHLY_LIMIT';
  return {
    allowed: reason === null,
    reason,
    dailySpent: spent.daily,
    monthlySpent: spent.monthly,
    dailyRemaining: remaining(state.dailyLimit, spent.daily),
    monthlyRemaining: remaining(state.monthlyLimit, spent.monthly),
  };
}

/**
 * A spend of `amount` at `now` applied to the budget: the decision, and the state the budget
 * holds afterwards — counters of the current windows plus the debit when allowed, windows that
 * only move forward. The spend statement (budgets.repository.ts `spend`) does exactly this in
 * one SQL statement; packages/core/test/budgets.property.test.ts proves the two agree.
 */
export function applySpend(
  state: BudgetState,
  amount: bigint,
  now: Date,
): { evaluation: Evaluation; next: BudgetState } {
  const evaluation = evaluateSpend(state, amount, now);
  const windows = windowsAt(now);
  const debit = evaluation.allowed ? amount : 0n;
  return {
    evaluation,
    next: {
      ...state,
      dailySpent: evaluation.dailySpent + debit,
      monthlySpent: evaluation.monthlySpent + debit,
      dayStart: new Date(Math.max(state.dayStart.getTime(), windows.day)),
      monthStart: new Date(Math.max(state.monthStart.getTime(), windows.month)),
    },
  };
}
