import { checksOptions, loadConfig } from '@vouch/config';
import { describe, expect, it } from 'vitest';
import { evaluateChecks, stateOf, statusFor, type VerificationFacts } from './verification.model.ts';

const defaultThresholds = checksOptions(loadConfig({})).verification;

describe('statusFor', () => {
  it('follows the seed’s table at every boundary', () => {
    expect([0, 1].map(statusFor)).toEqual(['SUSPICIOUS', 'SUSPICIOUS']);
    expect([2, 3, 4].map(statusFor)).toEqual(['UNVERIFIED', 'UNVERIFIED', 'UNVERIFIED']);
    expect([5, 6, 7].map(statusFor)).toEqual(['PARTIALLY_VERIFIED', 'PARTIALLY_VERIFIED', 'PARTIALLY_VERIFIED']);
    expect(statusFor(8)).toBe('VERIFIED');
  });
});

const now = new Date('2026-06-10T12:00:00Z');
const days = (n: number) => new Date(now.getTime() - n * 86_400_000);
const good: VerificationFacts = {
  known: true,
  registered: true,
  firstSeenAt: days(10),
  owner: '0x00000000000000000000000000000000000000aa',
  ownerChangedAt: null,
  score: 500,
  recentTransactions: 3,
  code: { ok: true, value: true },
  onChainOwner: { ok: true, value: '0x00000000000000000000000000000000000000aa' },
  addressSanctions: [],
  ownerSanctions: [],
  sanctionsList: { name: 'test list', snapshotDate: '2026-01-01', entries: 10, contentHash: 'ab' },
};

describe('evaluateChecks', () => {
  it('does not pass the sanctions screening when no list is active', () => {
    const results = evaluateChecks({ ...good, sanctionsList: null }, defaultThresholds, now);
    expect(results.sanctionsScreening.passed).toBe(false);
    expect(results.sanctionsScreening.detail).toMatch(/no sanctions list is active/);
  });

  it('passes all eight for a well-behaved contract agent', () => {
    const results = evaluateChecks(good, defaultThresholds, now);
    expect(Object.values(results).every((r) => r.passed)).toBe(true);
  });

  it('fails each check for its own reason, with a detail saying why', () => {
    const t = defaultThresholds;
    const fail = (facts: Partial<VerificationFacts>) => evaluateChecks({ ...good, ...facts }, t, now);
    expect(fail({ registered: false }).registration).toMatchObject({
      passed: false,
      detail: expect.stringContaining('not registered'),
    });
    expect(fail({ code: { ok: true, value: false } }).contractExists).toMatchObject({
      passed: false,
      detail: expect.stringContaining('no bytecode'),
    });
    expect(fail({ code: null }).contractExists.detail).toContain('no chain configured');
    expect(fail({ code: { ok: false, reason: 'timeout', unreachable: true } }).contractExists.detail).toContain(
      'timeout',
    );
    // Could not check is not failed: no chain, or a node that does not answer, leaves the check not run…
    expect(stateOf(fail({ code: null }).contractExists)).toBe('not_run');
    expect(stateOf(fail({ onChainOwner: { ok: false, reason: 'timeout', unreachable: true } }).ownerConsistency)).toBe(
      'not_run',
    );
    // …while a contract that answers without an owner() fails it.
    expect(
      stateOf(fail({ onChainOwner: { ok: false, reason: 'reverted', unreachable: false } }).ownerConsistency),
    ).toBe('failed');
    expect(stateOf(fail({ code: { ok: true, value: false } }).contractExists)).toBe('failed');
    expect(stateOf(fail({}).registration)).toBe('passed');
    expect(fail({ firstSeenAt: days(0.5) }).accountAge.passed).toBe(false);
    expect(fail({ firstSeenAt: days(1) }).accountAge.passed).toBe(true);
    expect(
      fail({ onChainOwner: { ok: true, value: '0x00000000000000000000000000000000000000bb' } }).ownerConsistency.detail,
    ).toContain('0x00000000000000000000000000000000000000bb');
    expect(fail({ owner: null }).ownerConsistency.detail).toContain('no owner registered');
    expect(fail({ onChainOwner: null }).ownerConsistency.detail).toContain('no chain configured');
    expect(fail({ recentTransactions: 0 }).activityLevel.passed).toBe(false);
    expect(fail({ ownerChangedAt: days(6.9) }).ownershipStability.passed).toBe(false);
    expect(fail({ ownerChangedAt: days(7) }).ownershipStability.passed).toBe(true);
    expect(fail({ addressSanctions: ['ETH'] }).sanctionsScreening.detail).toContain(
      'the address is on the OFAC SDN list (ETH)',
    );
    expect(fail({ ownerSanctions: ['USDT'] }).sanctionsScreening.detail).toContain('the owner is on');
    expect(fail({ score: 99 }).minimumScore.passed).toBe(false);
    expect(fail({ score: 100 }).minimumScore.passed).toBe(true);
  });

  it('uses the configured thresholds', () => {
    const strict = { ...defaultThresholds, minAgeDays: 30, minTransactions: 5, minScore: 600, ownerStableDays: 30 };
    const results = evaluateChecks({ ...good, ownerChangedAt: days(10) }, strict, now);
    expect(results.accountAge.passed).toBe(false);
    expect(results.activityLevel.passed).toBe(false);
    expect(results.minimumScore.passed).toBe(false);
    expect(results.ownershipStability.passed).toBe(false);
  });

  it('judges an unknown address: only the vacuous checks can pass', () => {
    const unknown = evaluateChecks(
      {
        ...good,
        known: false,
        registered: false,
        firstSeenAt: null,
        owner: null,
        score: 0,
        recentTransactions: 0,
        code: { ok: true, value: false },
        onChainOwner: null,
      },
      defaultThresholds,
      now,
    );
    expect(
      Object.entries(unknown)
        .filter(([, r]) => r.passed)
        .map(([k]) => k),
    ).toEqual(['ownershipStability', 'sanctionsScreening']);
  });
});
