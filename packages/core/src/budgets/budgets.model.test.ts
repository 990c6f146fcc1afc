import { describe, expect, it } from 'vitest';
import {
  applySpend,
  type BudgetState,
  currentSpent,
  dayStart,
  evaluateSpend,
  monthStart,
  nextDayStart,
  nextMonthStart,
  refundRestores,
  releaseHold,
  windowsAt,
} from './budgets.model.ts';

const d = (iso: string) => new Date(iso);

describe('day windows (UTC)', () => {
  it('dayStart of the last millisecond of a day is that day', () => {
    expect(dayStart(d('2027-03-15T23:59:59.999Z')).toISOString()).toBe('2027-03-15T00:00:00.000Z');
  });

  it('dayStart of midnight is that same midnight', () => {
    expect(dayStart(d('2027-03-16T00:00:00.000Z')).toISOString()).toBe('2027-03-16T00:00:00.000Z');
  });

  it('nextDayStart of the last millisecond of a day is the following midnight', () => {
    expect(nextDayStart(d('2027-03-15T23:59:59.999Z')).toISOString()).toBe('2027-03-16T00:00:00.000Z');
  });

  it('nextDayStart of midnight is the next midnight, not the same instant', () => {
    expect(nextDayStart(d('2027-03-16T00:00:00.000Z')).toISOString()).toBe('2027-03-17T00:00:00.000Z');
  });

  it('crosses the end of a 30- and 31-day month', () => {
    expect(nextDayStart(d('2027-04-30T12:00:00.000Z')).toISOString()).toBe('2027-05-01T00:00:00.000Z');
    expect(nextDayStart(d('2027-01-31T23:59:59.999Z')).toISOString()).toBe('2027-02-01T00:00:00.000Z');
  });

  it('crosses Dec 31 into Jan 1 of the next year', () => {
    expect(dayStart(d('2027-12-31T23:59:59.999Z')).toISOString()).toBe('2027-12-31T00:00:00.000Z');
    expect(nextDayStart(d('2027-12-31T23:59:59.999Z')).toISOString()).toBe('2028-01-01T00:00:00.000Z');
  });

  it('Feb 28 is followed by Mar 1 in a non-leap year (2027)', () => {
    expect(nextDayStart(d('2027-02-28T23:59:59.999Z')).toISOString()).toBe('2027-03-01T00:00:00.000Z');
  });

  it('Feb 28 is followed by Feb 29, then Mar 1, in a leap year (2028)', () => {
    expect(nextDayStart(d('2028-02-28T23:59:59.999Z')).toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(dayStart(d('2028-02-29T23:59:59.999Z')).toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(nextDayStart(d('2028-02-29T23:59:59.999Z')).toISOString()).toBe('2028-03-01T00:00:00.000Z');
  });

  it('uses UTC even for instants whose local date differs', () => {
    // 01:00 at +02:00 on July 1 is 23:00 UTC on June 30.
    expect(dayStart(d('2027-07-01T01:00:00+02:00')).toISOString()).toBe('2027-06-30T00:00:00.000Z');
  });
});

describe('month windows (UTC)', () => {
  it('monthStart of the last millisecond of a month is the first of that month', () => {
    expect(monthStart(d('2027-04-30T23:59:59.999Z')).toISOString()).toBe('2027-04-01T00:00:00.000Z');
  });

  it('monthStart of the first instant of a month is itself', () => {
    expect(monthStart(d('2027-05-01T00:00:00.000Z')).toISOString()).toBe('2027-05-01T00:00:00.000Z');
  });

  it('nextMonthStart of the last millisecond of a month is the first of the next', () => {
    expect(nextMonthStart(d('2027-04-30T23:59:59.999Z')).toISOString()).toBe('2027-05-01T00:00:00.000Z');
  });

  it('nextMonthStart of the first instant of a month is the first of the following month', () => {
    expect(nextMonthStart(d('2027-05-01T00:00:00.000Z')).toISOString()).toBe('2027-06-01T00:00:00.000Z');
  });

  it('nextMonthStart from the 31st does not skip a short month', () => {
    expect(nextMonthStart(d('2027-01-31T12:00:00.000Z')).toISOString()).toBe('2027-02-01T00:00:00.000Z');
  });

  it('crosses Dec 31 into Jan 1 of the next year', () => {
    expect(monthStart(d('2027-12-31T23:59:59.999Z')).toISOString()).toBe('2027-12-01T00:00:00.000Z');
    expect(nextMonthStart(d('2027-12-31T23:59:59.999Z')).toISOString()).toBe('2028-01-01T00:00:00.000Z');
  });

  it('February ends on the 28th in 2027 and the 29th in 2028', () => {
    expect(monthStart(d('2027-02-28T23:59:59.999Z')).toISOString()).toBe('2027-02-01T00:00:00.000Z');
    expect(nextMonthStart(d('2027-02-28T23:59:59.999Z')).toISOString()).toBe('2027-03-01T00:00:00.000Z');
    expect(monthStart(d('2028-02-29T23:59:59.999Z')).toISOString()).toBe('2028-02-01T00:00:00.000Z');
    expect(nextMonthStart(d('2028-02-28T23:59:59.999Z')).toISOString()).toBe('2028-03-01T00:00:00.000Z');
    expect(nextMonthStart(d('2028-02-29T23:59:59.999Z')).toISOString()).toBe('2028-03-01T00:00:00.000Z');
  });
});

const now = d('2027-03-15T12:00:00.000Z');

function state(overrides: Partial<BudgetState> = {}): BudgetState {
  return {
    screening: null,
    perTxLimit: 100n,
    dailyLimit: 500n,
    monthlyLimit: 2000n,
    dailySpent: 0n,
    monthlySpent: 0n,
    dailyHeld: 0n,
    monthlyHeld: 0n,
    dayStart: dayStart(now),
    monthStart: monthStart(now),
    ...overrides,
  };
}

describe('windowsAt (remembers the last day)', () => {
  it('answers right whatever order instants come in, across days, months and years', () => {
    const instants = [
      '2026-11-21T10:00:00.000Z',
      '2026-11-21T23:59:59.999Z',
      '2026-11-22T00:00:00.000Z',
      '2026-11-21T00:00:00.000Z', // back to the day before
      '2026-11-30T23:59:59.999Z',
      '2026-12-01T00:00:00.000Z',
      '2026-12-31T23:59:59.999Z',
      '2027-01-01T00:00:00.000Z',
      '2024-02-29T12:00:00.000Z',
      '2026-11-21T10:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00.000Z',
    ].map(d);
    for (const now of instants) {
      const [y, m, day] = [now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()];
      expect(windowsAt(now)).toEqual({
        day: Date.UTC(y, m, day),
        nextDay: Date.UTC(y, m, day + 1),
        month: Date.UTC(y, m, 1),
        nextMonth: Date.UTC(y, m + 1, 1),
      });
    }
  });
});

describe('currentSpent', () => {
  it('keeps counters whose windows contain now', () => {
    expect(currentSpent(state({ dailySpent: 30n, monthlySpent: 70n }), now)).toEqual({
      daily: 30n,
      monthly: 70n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
    });
  });

  it('resets a daily counter from a previous day but keeps the month', () => {
    const s = state({ dailySpent: 30n, monthlySpent: 70n, dayStart: d('2027-03-14T00:00:00.000Z') });
    expect(currentSpent(s, now)).toEqual({ daily: 0n, monthly: 70n, dailyHeld: 0n, monthlyHeld: 0n });
  });

  it('resets both counters from a previous month', () => {
    const s = state({
      dailySpent: 30n,
      monthlySpent: 70n,
      dayStart: d('2027-02-28T00:00:00.000Z'),
      monthStart: d('2027-02-01T00:00:00.000Z'),
    });
    expect(currentSpent(s, now)).toEqual({ daily: 0n, monthly: 0n, dailyHeld: 0n, monthlyHeld: 0n });
  });

  it('resets exactly at the window boundary', () => {
    const s = state({ dailySpent: 30n, monthlySpent: 70n });
    expect(currentSpent(s, d('2027-03-15T23:59:59.999Z'))).toEqual({
      daily: 30n,
      monthly: 70n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
    });
    expect(currentSpent(s, d('2027-03-16T00:00:00.000Z'))).toEqual({
      daily: 0n,
      monthly: 70n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
    });
    expect(currentSpent(s, d('2027-04-01T00:00:00.000Z'))).toEqual({
      daily: 0n,
      monthly: 0n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
    });
  });

  it('keeps counters whose window is later than now (clock skew)', () => {
    const s = state({
      dailySpent: 30n,
      monthlySpent: 70n,
      dayStart: d('2027-04-01T00:00:00.000Z'),
      monthStart: d('2027-04-01T00:00:00.000Z'),
    });
    expect(currentSpent(s, d('2027-03-31T23:59:59.999Z'))).toEqual({
      daily: 30n,
      monthly: 70n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
    });
  });
});

describe('evaluateSpend', () => {
  it('refuses anything for a sanctioned agent, or with no sanctions list, before any limit', () => {
    for (const screening of ['SANCTIONED', 'SANCTIONS_LIST_UNAVAILABLE'] as const) {
      const e = evaluateSpend(state({ screening }), 1n, now);
      expect([e.allowed, e.reason, e.dailyRemaining]).toEqual([false, screening, 500n]);
      expect(applySpend(state({ screening }), 1n, now).next.dailySpent).toBe(0n);
      expect(applySpend(state({ screening }), 1n, now, 'hold').next.dailyHeld).toBe(0n);
    }
  });

  it('allows a spend within every limit and reports spent/remaining', () => {
    const e = evaluateSpend(state({ dailySpent: 100n, monthlySpent: 300n }), 50n, now);
    expect(e).toEqual({
      allowed: true,
      reason: null,
      dailySpent: 100n,
      monthlySpent: 300n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
      dailyRemaining: 400n,
      monthlyRemaining: 1700n,
    });
  });

  it('gives PER_TX_LIMIT first, even when daily and monthly also fail', () => {
    const e = evaluateSpend(state({ dailySpent: 500n, monthlySpent: 2000n }), 101n, now);
    expect(e.allowed).toBe(false);
    expect(e.reason).toBe('PER_TX_LIMIT');
  });

  it('gives DAILY_LIMIT before MONTHLY_LIMIT when both fail', () => {
    const e = evaluateSpend(state({ dailySpent: 450n, monthlySpent: 1990n }), 100n, now);
    expect(e.allowed).toBe(false);
    expect(e.reason).toBe('DAILY_LIMIT');
  });

  it('gives MONTHLY_LIMIT when only the month fails', () => {
    const e = evaluateSpend(state({ dailySpent: 0n, monthlySpent: 1950n }), 100n, now);
    expect(e.allowed).toBe(false);
    expect(e.reason).toBe('MONTHLY_LIMIT');
  });

  it('allows exactly the per-transaction limit and refuses one more', () => {
    expect(evaluateSpend(state(), 100n, now)).toMatchObject({ allowed: true, reason: null });
    expect(evaluateSpend(state(), 101n, now)).toMatchObject({ allowed: false, reason: 'PER_TX_LIMIT' });
  });

  it('allows spent + amount == daily limit and refuses limit + 1', () => {
    expect(evaluateSpend(state({ dailySpent: 400n }), 100n, now)).toMatchObject({ allowed: true, reason: null });
    expect(evaluateSpend(state({ dailySpent: 401n }), 100n, now)).toMatchObject({
      allowed: false,
      reason: 'DAILY_LIMIT',
    });
  });

  it('allows spent + amount == monthly limit and refuses limit + 1', () => {
    expect(evaluateSpend(state({ monthlySpent: 1900n }), 100n, now)).toMatchObject({ allowed: true, reason: null });
    expect(evaluateSpend(state({ monthlySpent: 1901n }), 100n, now)).toMatchObject({
      allowed: false,
      reason: 'MONTHLY_LIMIT',
    });
  });

  it('ignores spending from a passed window', () => {
    const s = state({
      dailySpent: 500n,
      monthlySpent: 2000n,
      dayStart: d('2027-02-28T00:00:00.000Z'),
      monthStart: d('2027-02-01T00:00:00.000Z'),
    });
    expect(evaluateSpend(s, 100n, now)).toMatchObject({
      allowed: true,
      reason: null,
      dailySpent: 0n,
      monthlySpent: 0n,
      dailyRemaining: 500n,
      monthlyRemaining: 2000n,
    });
  });

  it('never reports negative remaining when a limit was lowered below spent', () => {
    const e = evaluateSpend(state({ dailyLimit: 50n, monthlyLimit: 60n, dailySpent: 80n, monthlySpent: 90n }), 1n, now);
    expect(e.allowed).toBe(false);
    expect(e.reason).toBe('DAILY_LIMIT');
    expect(e.dailySpent).toBe(80n);
    expect(e.monthlySpent).toBe(90n);
    expect(e.dailyRemaining).toBe(0n);
    expect(e.monthlyRemaining).toBe(0n);
  });

  it('is exact with amounts near 2^256 - 1', () => {
    const MAX = 2n ** 256n - 1n;
    const big = state({
      perTxLimit: MAX,
      dailyLimit: MAX,
      monthlyLimit: MAX,
      dailySpent: MAX - 5n,
      monthlySpent: MAX - 10n,
    });

    // Daily: exactly reaching MAX is allowed.
    const atLimit = evaluateSpend(big, 5n, now);
    expect(atLimit).toEqual({
      allowed: true,
      reason: null,
      dailySpent: MAX - 5n,
      monthlySpent: MAX - 10n,
      dailyHeld: 0n,
      monthlyHeld: 0n,
      dailyRemaining: 5n,
      monthlyRemaining: 10n,
    });
    // One more wei overflows the daily limit; a float would not see the difference.
    expect(evaluateSpend(big, 6n, now)).toMatchObject({ allowed: false, reason: 'DAILY_LIMIT' });

    // Monthly: headroom 10 while the day is fresh.
    const fresh = { ...big, dailySpent: 0n };
    expect(evaluateSpend(fresh, 10n, now)).toMatchObject({ allowed: true, reason: null });
    expect(evaluateSpend(fresh, 11n, now)).toMatchObject({ allowed: false, reason: 'MONTHLY_LIMIT' });

    // A spend of the whole range on an empty budget.
    const empty = { ...big, dailySpent: 0n, monthlySpent: 0n };
    expect(evaluateSpend(empty, MAX, now)).toMatchObject({ allowed: true, dailyRemaining: MAX, monthlyRemaining: MAX });
    expect(evaluateSpend({ ...empty, perTxLimit: MAX - 1n }, MAX, now)).toMatchObject({
      allowed: false,
      reason: 'PER_TX_LIMIT',
    });
  });
});

describe('holds', () => {
  it('count against every limit as what is spent does, in the windows they were made in', () => {
    const s = state({ dailySpent: 200n, dailyHeld: 250n, monthlySpent: 200n, monthlyHeld: 250n });
    expect(evaluateSpend(s, 50n, now)).toMatchObject({ allowed: true, dailyRemaining: 50n });
    expect(evaluateSpend(s, 51n, now)).toMatchObject({ allowed: false, reason: 'DAILY_LIMIT' });
    // The next day, yesterday's holds no longer count against the day (they still do in the month).
    const tomorrow = new Date(now.getTime() + 86_400_000);
    if (tomorrow.getUTCMonth() === now.getUTCMonth()) {
      expect(evaluateSpend(s, 100n, tomorrow)).toMatchObject({ allowed: true, dailyHeld: 0n, monthlyHeld: 250n });
    }
  });

  it('a hold adds to what is held; released, its capture is spent and the rest is free again', () => {
    const { evaluation, next } = applySpend(state(), 80n, now, 'hold');
    expect(evaluation.allowed).toBe(true);
    expect([next.dailyHeld, next.monthlyHeld, next.dailySpent]).toEqual([80n, 80n, 0n]);
    const hold = { amount: 80n, dayStart: next.dayStart, monthStart: next.monthStart };
    const captured = releaseHold(next, hold, 30n);
    expect([captured.dailyHeld, captured.dailySpent, captured.monthlyHeld, captured.monthlySpent]).toEqual([
      0n,
      30n,
      0n,
      30n,
    ]);
    const voided = releaseHold(next, hold, 0n);
    expect([voided.dailyHeld, voided.dailySpent]).toEqual([0n, 0n]);
  });

  it('a hold of a window that has passed changes nothing of the current one when released', () => {
    const yesterday = state({ dailyHeld: 0n, monthlyHeld: 80n, dailySpent: 10n });
    const hold = {
      amount: 80n,
      dayStart: new Date(yesterday.dayStart.getTime() - 86_400_000),
      monthStart: yesterday.monthStart,
    };
    const after = releaseHold(yesterday, hold, 80n);
    expect([after.dailyHeld, after.dailySpent, after.monthlyHeld, after.monthlySpent]).toEqual([0n, 10n, 0n, 80n]);
  });

  it('a refund gives back to the windows still counted, never more than they show as spent', () => {
    const s = state({ dailySpent: 50n, monthlySpent: 500n });
    const sameWindows = { dayStart: s.dayStart, monthStart: s.monthStart };
    expect(refundRestores(s, sameWindows, 30n, now)).toEqual({ daily: 30n, monthly: 30n });
    expect(refundRestores(s, sameWindows, 70n, now)).toEqual({ daily: 50n, monthly: 70n });
    const earlierDay = { dayStart: new Date(s.dayStart.getTime() - 86_400_000), monthStart: s.monthStart };
    expect(refundRestores(s, earlierDay, 30n, now)).toEqual({ daily: 0n, monthly: 30n });
    // The day after the spend, its day is closed even if the budget has not rolled yet.
    const nextDay = new Date(now.getTime() + 86_400_000);
    expect(refundRestores(s, sameWindows, 30n, nextDay).daily).toBe(0n);
  });
});
