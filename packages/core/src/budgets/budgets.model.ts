/** Budget rules: calendar windows in UTC and the evaluation of one prospective spend. */
import type { RefusalReason } from '@vouch/schemas';
import type { ScreeningRefusal } from '../sanctions/sanctions.model.ts';

export type { RefusalReason };

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
  /** Reserved by holds made in the windows of `dayStart` and `monthStart`. */
  dailyHeld: bigint;
  monthlyHeld: bigint;
  /** Start of the window `dailySpent` and `dailyHeld` belong to. */
  dayStart: Date;
  monthStart: Date;
  /** Why the sanctions screen refuses every payment of the agent (no active list, the agent or its owner listed); null: none. */
  screening: ScreeningRefusal | null;
}

/**
 * Spent and held amounts in the windows that contain `now`. A counter whose window has
 * passed counts as zero (a hold counts in the windows it was made in); a window recorded
 * later than `now` (a replica whose clock runs ahead) is kept, so windows only move forward.
 */
export function currentSpent(
  state: BudgetState,
  now: Date,
): { daily: bigint; monthly: bigint; dailyHeld: bigint; monthlyHeld: bigint } {
  const windows = windowsAt(now);
  const dayCurrent = state.dayStart.getTime() >= windows.day;
  const monthCurrent = state.monthStart.getTime() >= windows.month;
  return {
    daily: dayCurrent ? state.dailySpent : 0n,
    monthly: monthCurrent ? state.monthlySpent : 0n,
    dailyHeld: dayCurrent ? state.dailyHeld : 0n,
    monthlyHeld: monthCurrent ? state.monthlyHeld : 0n,
  };
}

const remaining = (limit: bigint, spent: bigint) => (limit > spent ? limit - spent : 0n);

export interface Evaluation {
  allowed: boolean;
  reason: RefusalReason | null;
  dailySpent: bigint;
  monthlySpent: bigint;
  dailyHeld: bigint;
  monthlyHeld: bigint;
  /** What may still be spent or held: the limit less what is spent and held. */
  dailyRemaining: bigint;
  monthlyRemaining: bigint;
}

/**
 * Whether `amount` may be spent (or held) now; never while the sanctions screen refuses the
 * agent, else the first limit that fails is the reason. What is held counts against a limit as
 * what is spent does.
 */
export function evaluateSpend(state: BudgetState, amount: bigint, now: Date): Evaluation {
  const spent = currentSpent(state, now);
  const daily = spent.daily + spent.dailyHeld;
  const monthly = spent.monthly + spent.monthlyHeld;
  let reason: RefusalReason | null = null;
  if (state.screening !== null) reason = state.screening;
  else if (amount > state.perTxLimit) reason = 'PER_TX_LIMIT';
  else if (daily + amount > state.dailyLimit) reason = 'DAILY_LIMIT';
  else if (monthly + amount > state.monthlyLimit) reason = 'MONTHLY_LIMIT';
  return {
    allowed: reason === null,
    reason,
    dailySpent: spent.daily,
    monthlySpent: spent.monthly,
    dailyHeld: spent.dailyHeld,
    monthlyHeld: spent.monthlyHeld,
    dailyRemaining: remaining(state.dailyLimit, daily),
    monthlyRemaining: remaining(state.monthlyLimit, monthly),
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
  kind: 'spend' | 'hold' = 'spend',
): { evaluation: Evaluation; next: BudgetState } {
  const evaluation = evaluateSpend(state, amount, now);
  const windows = windowsAt(now);
  const debit = evaluation.allowed && kind === 'spend' ? amount : 0n;
  const hold = evaluation.allowed && kind === 'hold' ? amount : 0n;
  return {
    evaluation,
    next: {
      ...state,
      dailySpent: evaluation.dailySpent + debit,
      monthlySpent: evaluation.monthlySpent + debit,
      dailyHeld: evaluation.dailyHeld + hold,
      monthlyHeld: evaluation.monthlyHeld + hold,
      dayStart: new Date(Math.max(state.dayStart.getTime(), windows.day)),
      monthStart: new Date(Math.max(state.monthStart.getTime(), windows.month)),
    },
  };
}

/** A hold as the budget counts it: what it reserved, in which windows. */
export interface Hold {
  amount: bigint;
  dayStart: Date;
  monthStart: Date;
}

/**
 * A hold released, `captured` of it spent (0 for a void or an expiry): in each of the hold's
 * windows that the budget still counts, the hold leaves what is held and the capture joins what
 * is spent; in a window that has passed, nothing changes (a capture is attributed to the window
 * its hold was made in). The capture, void and expiry statements do the same in SQL.
 */
export function releaseHold(state: BudgetState, hold: Hold, captured: bigint): BudgetState {
  const sameDay = state.dayStart.getTime() === hold.dayStart.getTime();
  const sameMonth = state.monthStart.getTime() === hold.monthStart.getTime();
  return {
    ...state,
    dailyHeld: sameDay ? state.dailyHeld - hold.amount : state.dailyHeld,
    dailySpent: sameDay ? state.dailySpent + captured : state.dailySpent,
    monthlyHeld: sameMonth ? state.monthlyHeld - hold.amount : state.monthlyHeld,
    monthlySpent: sameMonth ? state.monthlySpent + captured : state.monthlySpent,
  };
}

/**
 * A refund of part of a spend made in the windows of `spent`, at `now`: what it gives back to each
 * of those windows that is still the current one (a window that has passed is closed: the refund
 * is recorded and gives back nothing there), never more than that window shows as spent.
 */
export function refundRestores(
  state: BudgetState,
  spent: { dayStart: Date; monthStart: Date },
  amount: bigint,
  now: Date,
) {
  const windows = windowsAt(now);
  const dayOpen = spent.dayStart.getTime() >= windows.day && state.dayStart.getTime() === spent.dayStart.getTime();
  const monthOpen =
    spent.monthStart.getTime() >= windows.month && state.monthStart.getTime() === spent.monthStart.getTime();
  return {
    daily: dayOpen ? min(amount, state.dailySpent) : 0n,
    monthly: monthOpen ? min(amount, state.monthlySpent) : 0n,
  };
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
