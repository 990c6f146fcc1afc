import { checksOptions, loadConfig } from '@vouch/config';
import { describe, expect, it } from 'vitest';
import {
  type AnomalyFacts,
  type AnomalyThresholds,
  anomalyModelConstants,
  evaluateAnomaly as evaluateWith,
  severityFor,
} from './anomaly.model.ts';

/** The model with the configuration's defaults. */
const defaults: AnomalyThresholds = { ...anomalyModelConstants, ...checksOptions(loadConfig({})).anomaly };
const evaluateAnomaly = (facts: AnomalyFacts, t: AnomalyThresholds = defaults) => evaluateWith(facts, t);

const ether = 10n ** 18n;
/** A steady agent: 720 transactions over 30 days (1 an hour), 1 ether each, none failed. */
const steady: AnomalyFacts = {
  lastHourCount: 0,
  count30d: 720,
  failed30d: 0,
  assetCount30d: 720,
  volume30d: 720n * ether,
  historyHours: 720,
  amount: ether,
  agentSanctioned: false,
  counterpartySanctioned: false,
  agentSuspicious: false,
};

describe('evaluateAnomaly', () => {
  it('sees nothing in a normal transaction', () => {
    const r = evaluateAnomaly(steady);
    expect(r).toMatchObject({ anomalyDetected: false, riskScore: 0, severity: 'LOW', flags: [] });
  });

  it('rounds the risk score half up from its exact value: 74.5 is CRITICAL, 49.5 is detected', () => {
    // 30 (10× the hourly average) + 24.5 (49 % failed: risk 0.98) + 20 (SUSPICIOUS) = 74.5 → 75.
    const r = evaluateAnomaly({
      ...steady,
      lastHourCount: 9,
      count30d: 100,
      failed30d: 49,
      historyHours: 100,
      agentSuspicious: true,
    });
    expect(r.factors.failureRate.risk).toBe(0.98);
    expect(r.riskScore).toBe(75);
    expect(r.severity).toBe('CRITICAL');
    // 20 (7× the average) + 4.5 (9 % failed) + 25 (20× the average amount) = 49.5 → 50, at ANOMALY_DETECT_AT.
    const d = evaluateAnomaly({
      ...steady,
      lastHourCount: 6,
      count30d: 100,
      failed30d: 9,
      historyHours: 100,
      assetCount30d: 100,
      volume30d: 100n * ether,
      amount: 20n * ether,
    });
    expect(d.riskScore).toBe(50);
    expect(d.anomalyDetected).toBe(true);
  });

  it('frequency alone: 10× the hourly average is full risk (30 of 100), flagged from 3×', () => {
    const r = evaluateAnomaly({ ...steady, lastHourCount: 9 });
    expect(r.factors.frequency).toMatchObject({ value: 10, risk: 1, contribution: 30 });
    expect(r.riskScore).toBe(30);
    expect(r.severity).toBe('MEDIUM');
    expect(r.anomalyDetected).toBe(false);
    expect(r.flags.map((f) => f.code)).toEqual(['HIGH_FREQUENCY']);
    expect(evaluateAnomaly({ ...steady, lastHourCount: 1 }).flags).toEqual([]);
    expect(evaluateAnomaly({ ...steady, lastHourCount: 2 }).flags.map((f) => f.code)).toEqual(['HIGH_FREQUENCY']);
  });

  it('frequency of an agent paying less than once an hour: a single payment is no burst, three in an hour are', () => {
    // One a day for 30 days: an hour holds whole payments, so against an average of 1/24 an hour
    // every payment would be 24× it. The expected count of an hour is the average, at least one.
    const daily = { ...steady, count30d: 30, assetCount30d: 30, volume30d: 30n * ether };
    const one = evaluateAnomaly(daily);
    expect(one.factors.frequency).toMatchObject({ value: 1, risk: 0, contribution: 0 });
    expect(one).toMatchObject({ riskScore: 0, severity: 'LOW', flags: [] });
    expect(evaluateAnomaly({ ...daily, lastHourCount: 1 }).flags).toEqual([]);
    const burst = evaluateAnomaly({ ...daily, lastHourCount: 2 });
    expect(burst.factors.frequency.value).toBe(3);
    expect(burst.flags).toEqual([
      { code: 'HIGH_FREQUENCY', message: '3 transactions this hour, 3.0× the hourly average (1.00, at least one)' },
    ]);
    // From one an hour on, the average itself is the measure, as before.
    expect(evaluateAnomaly({ ...steady, lastHourCount: 2 }).factors.frequency.value).toBe(3);
  });

  it('large value alone: 20× the average is full risk (25), flagged from 5×', () => {
    const r = evaluateAnomaly({ ...steady, amount: 20n * ether });
    expect(r.factors.largeValue).toMatchObject({ value: 20, risk: 1, contribution: 25 });
    expect(r.riskScore).toBe(25);
    expect(r.flags.map((f) => f.code)).toEqual(['LARGE_VALUE']);
    expect(evaluateAnomaly({ ...steady, amount: 4n * ether }).flags).toEqual([]);
    expect(evaluateAnomaly({ ...steady, amount: 5n * ether }).flags.map((f) => f.code)).toEqual(['LARGE_VALUE']);
  });

  it('failure rate alone: 50% failed is full risk (25), flagged from 20%, judged from 5 transactions', () => {
    const r = evaluateAnomaly({ ...steady, failed30d: 360 });
    expect(r.factors.failureRate).toMatchObject({ value: 0.5, risk: 1, contribution: 25 });
    expect(r.flags.map((f) => f.code)).toEqual(['HIGH_FAILURE_RATE']);
    expect(evaluateAnomaly({ ...steady, failed30d: 143 }).flags).toEqual([]);
    const young = { ...steady, count30d: 4, failed30d: 4, assetCount30d: 4, volume30d: 4n * ether, historyHours: 4 };
    expect(evaluateAnomaly(young).factors.failureRate.risk).toBe(0);
  });

  it('flagged alone: a suspicious agent adds 20; a sanctions match is always a critical anomaly', () => {
    const suspicious = evaluateAnomaly({ ...steady, agentSuspicious: true });
    expect(suspicious).toMatchObject({ riskScore: 20, severity: 'LOW', anomalyDetected: false });
    const counterparty = evaluateAnomaly({ ...steady, counterpartySanctioned: true });
    expect(counterparty).toMatchObject({ riskScore: 20, severity: 'CRITICAL', anomalyDetected: true });
    expect(counterparty.flags.map((f) => f.code)).toEqual(['SANCTIONED_COUNTERPARTY']);
    expect(evaluateAnomaly({ ...steady, agentSanctioned: true }).flags.map((f) => f.code)).toEqual([
      'SANCTIONED_AGENT',
    ]);
  });

  it('adds the factors and reports an anomaly from the detection threshold', () => {
    const r = evaluateAnomaly({ ...steady, lastHourCount: 9, amount: 20n * ether });
    expect(r).toMatchObject({ riskScore: 55, severity: 'HIGH', anomalyDetected: true });
    const all = evaluateAnomaly({
      ...steady,
      lastHourCount: 9,
      amount: 20n * ether,
      failed30d: 400,
      agentSuspicious: true,
    });
    expect(all).toMatchObject({ riskScore: 100, severity: 'CRITICAL' });
    expect(evaluateAnomaly({ ...steady, lastHourCount: 9 }, { ...defaults, detectAt: 30 }).anomalyDetected).toBe(true);
  });

  it('compares an amount with the average of its own asset only', () => {
    // 720 payments in 30 days, 10 of them in a token at 1,000,000 units each: 3,000,000 of the
    // token is 3× its average, not hundreds of times the average of every asset's amounts.
    const token = { ...steady, assetCount30d: 10, volume30d: 10n * 1_000_000n, amount: 3_000_000n };
    expect(evaluateAnomaly(token).flags.map((f) => f.code)).not.toContain('LARGE_VALUE');
    expect(evaluateAnomaly({ ...token, amount: 6_000_000n }).flags.map((f) => f.code)).toContain('LARGE_VALUE');
    // A first payment in an asset has no average to be large against.
    const first = evaluateAnomaly({ ...steady, assetCount30d: 0, volume30d: 0n, amount: 10n ** 30n });
    expect(first.flags.map((f) => f.code)).not.toContain('LARGE_VALUE');
  });

  it('divides by the exact average, not one rounded down first (small atomic amounts)', () => {
    // Amounts 1 and 2: the average is 1.5, so 7 is 4.667×, under the 5× flag (not 7× of an average of 1).
    const small = { ...steady, assetCount30d: 2, volume30d: 3n, amount: 7n };
    const r = evaluateAnomaly(small);
    expect(r.factors.largeValue.value).toBeCloseTo(4.667, 2);
    expect(r.flags.map((f) => f.code)).not.toContain('LARGE_VALUE');
    expect(evaluateAnomaly({ ...small, amount: 8n }).flags.map((f) => f.code)).toContain('LARGE_VALUE');
  });

  it('an agent with no history scores 0 risk and says so', () => {
    const r = evaluateAnomaly({
      ...steady,
      count30d: 0,
      failed30d: 0,
      assetCount30d: 0,
      volume30d: 0n,
      historyHours: 1,
      amount: 10n ** 30n,
    });
    expect(r).toMatchObject({ anomalyDetected: false, riskScore: 0, severity: 'LOW' });
    expect(r.flags.map((f) => f.code)).toEqual(['NO_HISTORY']);
  });

  it('keeps amounts exact up to 2^256-1', () => {
    const max = 2n ** 256n - 1n;
    const r = evaluateAnomaly({ ...steady, amount: max });
    expect(r.factors.largeValue.risk).toBe(1);
    expect(Number.isFinite(r.factors.largeValue.value)).toBe(true);
  });
});

describe('severityFor', () => {
  it('LOW <25, MEDIUM <50, HIGH <75, else CRITICAL', () => {
    expect([0, 24, 25, 49, 50, 74, 75, 100].map(severityFor)).toEqual([
      'LOW',
      'LOW',
      'MEDIUM',
      'MEDIUM',
      'HIGH',
      'HIGH',
      'CRITICAL',
      'CRITICAL',
    ]);
  });
});
