/** Budget rules: calendar windows in UTC and the evaluation of one prospective spend. */

export type RefusalReason = 'PER_TX_LIMIT' | 'DAILY_LIMIT' | 'MONTHLY_LIMIT' | 'NO_BUDGET';

export function dayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

export function nextDayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

export interface BudgetState {
  dailyLimit: bigint;
  monthlyLimit: bigint;
  perTxLimit: bigint;
  dailySpent: bigint;
  monthlySpent: bigint;
  /** Start of the window `dailySpent` belongs to. */
  dayStart: Date;
  monthStart: Date;
}

/**
 * Spent amounts in the windows that contain `now`. A counter whose window has
 * passed counts as zero; a window recorded later than `now` (a replica whose clock
 * runs ahead) is kept, so windows only move forward.
 */
export function currentSpent(state: BudgetState, now: Date): { daily: bigint; monthly: bigint } {
  return {
    daily: state.dayStart.getTime() >= dayStart(now).getTime() ? state.dailySpent : 0n,
    monthly: state.monthStart.getTime() >= monthStart(now).getTime() ? state.monthlySpent : 0n,
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

/** Whether `amount` may be spent now; the first limit that fails is the reason. */
export function evaluateSpend(state: BudgetState, amount: bigint, now: Date): Evaluation {
  const spent = currentSpent(state, now);
  let reason: RefusalReason | null = null;
  if (amount > state.perTxLimit) reason = 'PER_TX_LIMIT';
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
