import { type PolicyCondition, policyCondition } from '@vouch/schemas';
import { describe, expect, it } from 'vitest';
import { decide } from './decisions.model.ts';
import { evaluatePolicy, inTimeWindow, localTime, matches, type PolicyFacts } from './policy.model.ts';

const base: PolicyFacts = {
  amount: 100n,
  asset: '',
  counterparty: '0x00000000000000000000000000000000000000c1',
  category: 'compute',
  now: new Date('2026-06-10T10:00:00Z'), // a Wednesday
  agent: { score: 700, grade: 'BB', confidence: 0.6 },
  counterpartyAgent: null,
  counterpartySanctioned: false,
  velocity: async () => 0,
  toCounterparty: async () => 0n,
  anomalySeverity: async () => 'LOW',
};

describe('time windows', () => {
  it('read the local weekday and time of a named zone', () => {
    expect(localTime(base.now, 'UTC')).toEqual({ day: 'wed', minutes: 600 });
    expect(localTime(base.now, 'Asia/Tokyo')).toEqual({ day: 'wed', minutes: 19 * 60 });
    expect(localTime(base.now, 'America/Los_Angeles')).toEqual({ day: 'wed', minutes: 3 * 60 });
  });

  it('include from, exclude to, and span midnight when to comes first; early hours belong to the day before', () => {
    const office = { days: ['mon', 'tue', 'wed', 'thu', 'fri'] as const, from: '09:00', to: '17:00' };
    expect(inTimeWindow({ ...office, days: [...office.days] }, new Date('2026-06-10T09:00:00Z'))).toBe(true);
    expect(inTimeWindow({ ...office, days: [...office.days] }, new Date('2026-06-10T17:00:00Z'))).toBe(false);
    expect(inTimeWindow({ ...office, days: [...office.days] }, new Date('2026-06-13T10:00:00Z'))).toBe(false); // Saturday
    // Friday night 22:00 → 06:00: Saturday 02:00 still belongs to Friday's window.
    const night = { days: ['fri' as const], from: '22:00', to: '06:00' };
    expect(inTimeWindow(night, new Date('2026-06-13T02:00:00Z'))).toBe(true);
    expect(inTimeWindow(night, new Date('2026-06-12T02:00:00Z'))).toBe(false); // Friday 02:00 is Thursday's
    expect(inTimeWindow(night, new Date('2026-06-12T23:00:00Z'))).toBe(true);
    expect(inTimeWindow({ timeZone: 'Asia/Tokyo', from: '18:00', to: '09:00' }, base.now)).toBe(true);
    // `to` equal to `from`: the 24 hours from `from`, the next day's early hours the day's it began.
    const fridayFromNine = { days: ['fri' as const], from: '09:00', to: '09:00' };
    expect(inTimeWindow(fridayFromNine, new Date('2026-06-12T09:00:00Z'))).toBe(true);
    expect(inTimeWindow(fridayFromNine, new Date('2026-06-13T08:59:00Z'))).toBe(true); // Saturday morning
    expect(inTimeWindow(fridayFromNine, new Date('2026-06-13T09:00:00Z'))).toBe(false);
    expect(inTimeWindow(fridayFromNine, new Date('2026-06-12T08:59:00Z'))).toBe(false); // Thursday's
  });
});

describe('conditions', () => {
  it('all must hold; an empty rule always matches', async () => {
    expect(await matches({}, base)).toBe(true);
    expect(await matches({ amountAbove: '99', categoryIn: ['compute'] }, base)).toBe(true);
    expect(await matches({ amountAbove: '100' }, base)).toBe(false);
    expect(await matches({ amountAtMost: '100', categoryNotIn: ['travel'] }, base)).toBe(true);
    expect(await matches({ agentGradeAtLeast: 'BB', agentScoreBelow: 701 }, base)).toBe(true);
    expect(await matches({ agentGradeAtLeast: 'BBB' }, base)).toBe(false);
    expect(await matches({ agentConfidenceBelow: 0.6 }, base)).toBe(false);
  });

  it('about a counterparty: a list without one never contains it; standing only of a known agent', async () => {
    const none = { ...base, counterparty: null };
    expect(await matches({ counterpartyIn: ['0x00000000000000000000000000000000000000c1'] }, none)).toBe(false);
    expect(await matches({ counterpartyNotIn: ['0x00000000000000000000000000000000000000c1'] }, none)).toBe(true);
    expect(await matches({ counterpartyKnown: false }, none)).toBe(false);
    expect(await matches({ counterpartyKnown: false }, base)).toBe(true);
    // No counterparty: no listed one (as with counterpartyNotIn).
    expect(await matches({ counterpartySanctioned: false }, none)).toBe(true);
    expect(await matches({ counterpartySanctioned: true }, none)).toBe(false);
    expect(await matches({ counterpartyScoreBelow: 1000 }, base)).toBe(false);
    const known = { ...base, counterpartyAgent: { score: 300, grade: 'C' as const, confidence: 0.1 } };
    expect(await matches({ counterpartyScoreBelow: 1000, counterpartyGradeBelow: 'CC' }, known)).toBe(true);
  });

  it('each condition alone: one value that holds and one that does not, for every condition of the schema', async () => {
    const cp = base.counterparty as string;
    const other = '0x00000000000000000000000000000000000000c2';
    const known: PolicyFacts = { ...base, counterpartyAgent: { score: 300, grade: 'C', confidence: 0.1 } };
    const window = (s: number) => ({ windowSeconds: s });
    const reading: PolicyFacts = {
      ...base,
      velocity: async () => 3,
      toCounterparty: async () => 900n,
      anomalySeverity: async () => 'MEDIUM',
    };
    // [condition, facts, holds with, fails with]
    const table: { [K in keyof PolicyCondition]-?: [PolicyFacts, PolicyCondition[K], PolicyCondition[K]] } = {
      counterpartyIn: [base, [cp], [other]],
      counterpartyNotIn: [base, [other], [cp]],
      counterpartyKnown: [known, true, false],
      counterpartySanctioned: [{ ...base, counterpartySanctioned: true }, true, false],
      categoryIn: [base, ['compute'], ['travel']],
      categoryNotIn: [base, ['travel'], ['compute']],
      assetIn: [base, [''], ['USDC']],
      amountAbove: [base, '99', '100'],
      amountAtMost: [base, '100', '99'],
      timeWindow: [base, { from: '09:00', to: '11:00' }, { days: ['thu'] }],
      velocity: [reading, { max: 3, ...window(60) }, { max: 4, ...window(60) }],
      counterpartyCap: [reading, { amount: '999', ...window(60) }, { amount: '1000', ...window(60) }],
      agentScoreBelow: [base, 701, 700],
      agentScoreAtLeast: [base, 700, 701],
      agentGradeBelow: [base, 'BBB', 'BB'],
      agentGradeAtLeast: [base, 'BB', 'BBB'],
      agentConfidenceBelow: [base, 0.7, 0.6],
      agentConfidenceAtLeast: [base, 0.6, 0.7],
      counterpartyScoreBelow: [known, 301, 300],
      counterpartyScoreAtLeast: [known, 300, 301],
      counterpartyGradeBelow: [known, 'CC', 'C'],
      counterpartyGradeAtLeast: [known, 'C', 'CC'],
      counterpartyConfidenceBelow: [known, 0.2, 0.1],
      counterpartyConfidenceAtLeast: [known, 0.1, 0.2],
      anomalyRiskAtLeast: [reading, 'MEDIUM', 'HIGH'],
    };
    expect(Object.keys(table).sort()).toEqual(Object.keys(policyCondition.shape).sort());
    for (const [key, [facts, holds, fails]] of Object.entries(table)) {
      expect([key, await matches({ [key]: holds }, facts)]).toEqual([key, true]);
      expect([key, await matches({ [key]: fails }, facts)]).toEqual([key, false]);
    }
  });

  it('read windowed figures and the anomaly model only when reached', async () => {
    let reads = 0;
    const counting: PolicyFacts = {
      ...base,
      velocity: async () => {
        reads++;
        return 5;
      },
      toCounterparty: async () => {
        reads++;
        return 950n;
      },
      anomalySeverity: async () => {
        reads++;
        return 'HIGH';
      },
    };
    expect(await matches({ amountAbove: '1000', velocity: { max: 5, windowSeconds: 60 } }, counting)).toBe(false);
    expect(reads).toBe(0);
    // Whatever their place in `when`: a false condition that needs no read ends the rule first.
    expect(await matches({ velocity: { max: 5, windowSeconds: 60 }, agentScoreBelow: 500 }, counting)).toBe(false);
    expect(
      await matches({ counterpartyCap: { amount: '1', windowSeconds: 60 }, counterpartyGradeAtLeast: 'A' }, counting),
    ).toBe(false);
    expect(reads).toBe(0);
    expect(await matches({ velocity: { max: 5, windowSeconds: 60 } }, counting)).toBe(true);
    expect(await matches({ counterpartyCap: { amount: '1049', windowSeconds: 60 } }, counting)).toBe(true);
    expect(await matches({ counterpartyCap: { amount: '1050', windowSeconds: 60 } }, counting)).toBe(false);
    expect(await matches({ anomalyRiskAtLeast: 'HIGH' }, counting)).toBe(true);
    expect(await matches({ anomalyRiskAtLeast: 'CRITICAL' }, counting)).toBe(false);
  });
});

describe('a policy and the decision', () => {
  const rules = [
    { name: 'no travel', action: 'deny' as const, when: { categoryIn: ['travel'] } },
    { name: 'big', action: 'review' as const, when: { amountAbove: '500' } },
    { name: 'rest', action: 'allow' as const, when: { agentScoreAtLeast: 600 } },
  ];
  const evidence = {
    agent: { known: true, registered: true },
    sanctions: { listAvailable: true, agent: false, owner: false, counterparty: false },
    budget: { allowed: true, reason: null },
    approval: null,
  };

  it('first match wins; none matching denies; no policy allows', async () => {
    expect(await evaluatePolicy(rules, { ...base, category: 'travel', amount: 900n })).toMatchObject({
      kind: 'matched',
      rule: { name: 'no travel' },
    });
    expect(await evaluatePolicy(rules, { ...base, amount: 900n })).toMatchObject({ rule: { name: 'big' } });
    expect(await evaluatePolicy(rules, { ...base, agent: { ...base.agent, score: 10 } })).toEqual({
      kind: 'unmatched',
    });
    expect(await evaluatePolicy(null, base)).toEqual({ kind: 'none' });
  });

  it('a deny anywhere denies; review unless an approval is redeemed; every reason listed', async () => {
    const review = decide({ ...evidence, policy: { kind: 'matched', rule: rules[1] as (typeof rules)[1] } });
    expect(review.decision).toBe('review');
    const redeemed = decide({
      ...evidence,
      policy: { kind: 'matched', rule: rules[1] as (typeof rules)[1] },
      approval: { redeemed: true, id: '7' },
    });
    expect([redeemed.decision, redeemed.reasons.map((r) => r.code)]).toEqual([
      'allow',
      ['POLICY_REVIEW', 'APPROVAL_REDEEMED'],
    ]);
    const everything = decide({
      agent: { known: false, registered: false },
      sanctions: { listAvailable: false, agent: true, owner: true, counterparty: true },
      budget: { allowed: false, reason: 'SANCTIONED' },
      policy: { kind: 'unmatched' },
      approval: { redeemed: false, problem: 'gone' },
    });
    expect(everything.decision).toBe('deny');
    expect(everything.reasons.map((r) => r.code)).toEqual([
      'SANCTIONS_LIST_UNAVAILABLE',
      'AGENT_SANCTIONED',
      'OWNER_SANCTIONED',
      'COUNTERPARTY_SANCTIONED',
      'AGENT_UNKNOWN',
      'POLICY_NO_MATCH',
      'APPROVAL_INVALID',
    ]);
  });
});
