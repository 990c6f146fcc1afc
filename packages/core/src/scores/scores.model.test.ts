import { describe, expect, it } from 'vitest';
import { computeScore, confidenceOf, type ScoreInputs, scoreWeights, weiToEther } from './scores.model.ts';

const worked: ScoreInputs = {
  successRate: 0.98,
  volumeEther: 100,
  transactionCount: 500,
  budgetCompliance: 1,
  accountAgeDays: 365,
};

describe('scoreWeights', () => {
  it('are 0.30 / 0.25 / 0.20 / 0.15 / 0.10 and sum to 1', () => {
    expect(scoreWeights).toEqual({
      successRate: 0.3,
      volume: 0.25,
      count: 0.2,
      budgetCompliance: 0.15,
      accountAge: 0.1,
    });
    const total = Object.values(scoreWeights).reduce((a, b) => a + b, 0);
    expect(total).toBeCloseTo(1, 12);
  });
});

describe('computeScore', () => {
  it('computes the worked example: 894', () => {
    const { score, factors } = computeScore(worked);
    expect(score).toBe(894);
    expect(factors.successRate).toEqual({ value: 0.98, weight: 0.3, contribution: 294 });
    expect(factors.volume).toEqual({ value: 100, weight: 0.25, contribution: 250 });
    expect(factors.count).toEqual({ value: 500, weight: 0.2, contribution: 100 });
    expect(factors.budgetCompliance).toEqual({ value: 1, weight: 0.15, contribution: 150 });
    expect(factors.accountAge).toEqual({ value: 365, weight: 0.1, contribution: 100 });
    const sum =
      factors.successRate.contribution +
      factors.volume.contribution +
      factors.count.contribution +
      factors.budgetCompliance.contribution +
      factors.accountAge.contribution;
    expect(sum).toBe(894);
  });

  it('scores an unknown agent (no volume, no transactions, age 0) at 0 despite budgetCompliance 1', () => {
    const { score } = computeScore({
      successRate: 1,
      volumeEther: 0,
      transactionCount: 0,
      budgetCompliance: 1,
      accountAgeDays: 0,
    });
    expect(score).toBe(0);
  });

  it('does not zero an agent that has any of volume, count or age', () => {
    const base = { successRate: 0, volumeEther: 0, transactionCount: 0, budgetCompliance: 1, accountAgeDays: 0 };
    expect(computeScore({ ...base, accountAgeDays: 1 }).score).toBeGreaterThan(0);
    expect(computeScore({ ...base, transactionCount: 1 }).score).toBeGreaterThan(0);
    expect(computeScore({ ...base, volumeEther: 1 }).score).toBeGreaterThan(0);
  });

  it('scores a sanctioned agent at 0', () => {
    expect(computeScore({ ...worked, sanctioned: true }).score).toBe(0);
    expect(computeScore({ ...worked, sanctioned: false }).score).toBe(894);
  });

  it('saturates volume at 99 ether and above (250)', () => {
    for (const volumeEther of [99, 100, 1e6, 1e30]) {
      expect(computeScore({ ...worked, volumeEther }).factors.volume.contribution).toBe(250);
    }
    expect(computeScore({ ...worked, volumeEther: 98 }).factors.volume.contribution).toBeLessThan(250);
    // log10(9 + 1) / 2 = 0.5 → 125
    expect(computeScore({ ...worked, volumeEther: 9 }).factors.volume.contribution).toBe(125);
  });

  it('saturates count at 1000 and above (200)', () => {
    for (const transactionCount of [1000, 1001, 1e9]) {
      expect(computeScore({ ...worked, transactionCount }).factors.count.contribution).toBe(200);
    }
    // Contributions are rounded, so 999 already shows 200; 900 is clearly below.
    expect(computeScore({ ...worked, transactionCount: 900 }).factors.count.contribution).toBe(180);
  });

  it('saturates account age at 365 days and above (100)', () => {
    for (const accountAgeDays of [365, 366, 10_000]) {
      expect(computeScore({ ...worked, accountAgeDays }).factors.accountAge.contribution).toBe(100);
    }
    // 300 / 365 * 100 = 82.19… → 82
    expect(computeScore({ ...worked, accountAgeDays: 300 }).factors.accountAge.contribution).toBe(82);
  });

  it('reaches exactly 1000 with every factor maxed, and no more with out-of-range inputs', () => {
    const max = { successRate: 1, volumeEther: 1000, transactionCount: 1000, budgetCompliance: 1, accountAgeDays: 365 };
    expect(computeScore(max).score).toBe(1000);
    const over = {
      successRate: 5,
      volumeEther: 1e40,
      transactionCount: 1e12,
      budgetCompliance: 7,
      accountAgeDays: 1e9,
    };
    expect(computeScore(over).score).toBe(1000);
  });

  it('never goes below 0 with negative inputs', () => {
    const { score } = computeScore({
      successRate: -3,
      volumeEther: -10,
      transactionCount: -5,
      budgetCompliance: -1,
      accountAgeDays: -100,
    });
    expect(score).toBe(0);
  });

  it('rounds the exact products half up: 37.5 is 38 and a total of 399.5 is 400, not what float error makes of them', () => {
    // 10 transactions all successful, a quarter of the spend attempts within budget, 219 days:
    // 300 + 0 + 2 + 37.5 + 60 = 399.5 → 400 (color #FACC15 from 400), contribution round(37.5) = 38.
    const { score, factors } = computeScore({
      successRate: 1,
      volumeEther: 0,
      transactionCount: 10,
      budgetCompliance: 0.25,
      accountAgeDays: 219,
    });
    expect(factors.budgetCompliance.contribution).toBe(38);
    expect(factors.accountAge.contribution).toBe(60);
    expect(score).toBe(400);
    // 3 of 8 successful: 0.375 × 0.3 × 1000 = 112.5 → 113; so is a compliance of 0.75.
    const other = computeScore({
      successRate: 3 / 8,
      volumeEther: 0,
      transactionCount: 8,
      budgetCompliance: 0.75,
      accountAgeDays: 0,
    });
    expect(other.factors.successRate.contribution).toBe(113);
    expect(other.factors.budgetCompliance.contribution).toBe(113);
    // 112.5 + 1.6 + 112.5 = 226.6 → 227
    expect(other.score).toBe(227);
  });

  it('always returns an integer in 0..1000', () => {
    const samples: ScoreInputs[] = [
      { successRate: 0.3333, volumeEther: 3.7, transactionCount: 17, budgetCompliance: 0.77, accountAgeDays: 12.5 },
      { successRate: 0.12345, volumeEther: 0.001, transactionCount: 1, budgetCompliance: 0.5, accountAgeDays: 1 },
      { successRate: 0.999, volumeEther: 42.42, transactionCount: 333, budgetCompliance: 0.9, accountAgeDays: 200 },
    ];
    for (let i = 0; i < 200; i++) {
      samples.push({
        successRate: (i * 0.0137) % 1.2,
        volumeEther: (i * 7.31) % 150,
        transactionCount: (i * 13) % 1200,
        budgetCompliance: (i * 0.021) % 1.1,
        accountAgeDays: (i * 3.3) % 400,
      });
    }
    for (const s of samples) {
      const { score } = computeScore(s);
      expect(Number.isInteger(score)).toBe(true);
      expect(score).toBeGreaterThanOrEqual(0);
      expect(score).toBeLessThanOrEqual(1000);
    }
  });
});

describe('weiToEther', () => {
  it('converts 1e18 wei to 1 ether', () => {
    expect(weiToEther(10n ** 18n)).toBe(1);
  });

  it('converts 0 wei to 0', () => {
    expect(weiToEther(0n)).toBe(0);
  });

  it('handles fractional ether', () => {
    expect(weiToEther(5n * 10n ** 17n)).toBe(0.5);
  });

  it('gives a finite number for 2^256 - 1 wei', () => {
    const value = weiToEther(2n ** 256n - 1n);
    expect(Number.isFinite(value)).toBe(true);
    expect(value / (Number(2n ** 256n) / 1e18)).toBeCloseTo(1, 10);
    expect(value).toBeGreaterThan(1e59);
  });
});

describe('confidenceOf', () => {
  const now = new Date('2026-06-01T00:00:00Z');
  const daysAgo = (days: number) => new Date(now.getTime() - days * 86_400_000);

  it('grows with evidence and age, saturating, and says when history is insufficient', () => {
    expect(confidenceOf(0, daysAgo(400), now)).toEqual({ confidence: 0, state: 'insufficient_history' });
    expect(confidenceOf(10, daysAgo(30), now)).toEqual({ confidence: 0.5, state: 'established' });
    expect(confidenceOf(90, daysAgo(365), now)).toEqual({ confidence: 0.9, state: 'established' });
    expect(confidenceOf(90, daysAgo(15), now)).toEqual({ confidence: 0.45, state: 'established' });
    // Thresholds: 5 transactions and 7 days.
    expect(confidenceOf(4, daysAgo(100), now).state).toBe('insufficient_history');
    expect(confidenceOf(5, daysAgo(7), now).state).toBe('established');
    expect(confidenceOf(500, daysAgo(6.9), now).state).toBe('insufficient_history');
    // Two decimals, half up from the exact value: 30 / 40 × 21 / 30 = 0.525 → 0.53, 6 / 16 × 18 / 30 = 0.225 → 0.23.
    expect(confidenceOf(30, daysAgo(21), now).confidence).toBe(0.53);
    expect(confidenceOf(6, daysAgo(18), now).confidence).toBe(0.23);
    // Never above 1, never below 0, whatever the clock says.
    expect(confidenceOf(1_000_000, daysAgo(10_000), now).confidence).toBe(1);
    expect(confidenceOf(50, new Date(now.getTime() + 86_400_000), now).confidence).toBe(0);
  });
});
