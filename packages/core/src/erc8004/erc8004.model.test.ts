import { describe, expect, it } from 'vitest';
import {
  adjustmentOf,
  type FeedbackFacts,
  latestPerClient,
  proofOfPaymentIn,
  walletOf,
  weigh,
  withAdjustment,
} from './erc8004.model.ts';

const facts = (over: Partial<FeedbackFacts> = {}): FeedbackFacts => ({
  client: '0x1',
  feedbackIndex: '1',
  value: '80',
  decimals: 0,
  tag1: 'starred',
  tag2: '',
  revoked: false,
  responses: 0,
  proofOfPayment: null,
  clientScore: null,
  clientSanctioned: false,
  clientSelfRelated: false,
  paymentBacked: false,
  ...over,
});

describe('ERC-8004 feedback weights', () => {
  it('an unknown client counts 0.1, a known one its score ÷ 1000, payment-backed three times (at most 1)', () => {
    expect(weigh(facts()).weight).toBe(0.1);
    expect(weigh(facts({ clientScore: 700 })).weight).toBe(0.7);
    expect(weigh(facts({ paymentBacked: true })).weight).toBe(0.3);
    expect(weigh(facts({ clientScore: 700, paymentBacked: true })).weight).toBe(1);
  });

  it('self-related, sanctioned, revoked and non-rating feedback counts nothing', () => {
    expect(weigh(facts({ clientSelfRelated: true, clientScore: 900 }))).toMatchObject({
      verdict: 'self_related',
      weight: 0,
    });
    expect(weigh(facts({ clientSanctioned: true }))).toMatchObject({ verdict: 'sanctioned_client', weight: 0 });
    expect(weigh(facts({ revoked: true }))).toMatchObject({ verdict: 'revoked', weight: 0 });
    expect(weigh(facts({ tag1: 'responseTime', value: '1100' }))).toMatchObject({ verdict: 'not_a_rating' });
    expect(weigh(facts({ value: '101' })).verdict).toBe('not_a_rating');
    expect(weigh(facts({ tag1: 'vouch-score', value: '894', decimals: 1 })).rating).toBeCloseTo(89.4);
  });

  it('reads a value just outside 0–100 as no rating, however close: the bounds are compared exactly', () => {
    // 100.000000000000000001 and 100 are the same double; the value is above 100 all the same.
    expect(weigh(facts({ value: '100000000000000000001', decimals: 18 })).verdict).toBe('not_a_rating');
    expect(weigh(facts({ value: '100000000000000000000', decimals: 18 }))).toMatchObject({
      verdict: 'counted',
      rating: 100,
    });
    expect(weigh(facts({ value: '0', decimals: 18 })).verdict).toBe('counted');
    expect(weigh(facts({ value: '-1', decimals: 18 })).verdict).toBe('not_a_rating');
  });

  it('moves the score by at most 100 points, by confidence, and a positive move needs a current index', () => {
    const five = Array.from({ length: 5 }, () => weigh(facts({ value: '100', clientScore: 1000 })));
    expect(adjustmentOf(five, 'current')).toMatchObject({ adjustment: 100, applied: true, confidence: 1 });
    expect(adjustmentOf(five, 'behind')).toMatchObject({ adjustment: 100, applied: false });
    const bad = Array.from({ length: 5 }, () => weigh(facts({ value: '0', clientScore: 1000 })));
    expect(adjustmentOf(bad, 'unavailable')).toMatchObject({ adjustment: -100, applied: true });
    // No sanctions list: no client was screened, so only what lowers the score is applied.
    expect(adjustmentOf(five, 'current', false)).toMatchObject({ adjustment: 100, applied: false });
    expect(adjustmentOf(bad, 'current', false)).toMatchObject({ adjustment: -100, applied: true });
    // Ten unknown clients (weight 1 in all) earn a fifth of the full effect.
    const sybils = Array.from({ length: 10 }, () => weigh(facts({ value: '100' })));
    expect(adjustmentOf(sybils, 'current')).toMatchObject({ adjustment: 20, confidence: 0.2 });
    expect(adjustmentOf([weigh(facts({ value: '50', clientScore: 1000 }))], 'current').adjustment).toBe(0);
    expect(adjustmentOf([], 'current')).toMatchObject({ adjustment: 0, applied: false, rating: null });
    const a = adjustmentOf(five, 'current');
    expect(withAdjustment(950, a, false)).toBe(1000);
    expect(withAdjustment(950, a, true)).toBe(950);
  });

  it('counts one client once: its latest counted rating; earlier ones are superseded, others untouched', () => {
    const counted = (weight: number) => ({ verdict: 'counted' as const, rating: 90, weight });
    const revoked = { verdict: 'revoked' as const, rating: 90, weight: 0 };
    const out = latestPerClient([
      { client: 'a', feedbackIndex: '2', weighed: counted(0.1) },
      { client: 'a', feedbackIndex: '10', weighed: counted(0.1) },
      { client: 'a', feedbackIndex: '11', weighed: revoked },
      { client: 'b', feedbackIndex: '1', weighed: counted(0.5) },
      { client: 'a', feedbackIndex: '9', weighed: counted(0.1) },
    ]);
    expect(out.map((w) => [w.verdict, w.weight])).toEqual([
      ['superseded', 0],
      ['counted', 0.1], // 10 is the latest that counts (11 was revoked), compared as numbers
      ['revoked', 0],
      ['counted', 0.5],
      ['superseded', 0],
    ]);
  });

  it('reads agentWallet metadata and a proofOfPayment', () => {
    expect(walletOf(`0x${'ab'.repeat(20)}`)).toBe(`0x${'ab'.repeat(20)}`);
    expect(walletOf('0x')).toBeNull();
    const txHash = `0x${'1'.repeat(64)}`;
    expect(
      proofOfPaymentIn({
        proofOfPayment: { fromAddress: `eip155:1:0x${'A'.repeat(40)}`, toAddress: 'x', chainId: 1, txHash },
      }),
    ).toEqual({ fromAddress: `0x${'a'.repeat(40)}`, toAddress: null, chainId: '1', txHash });
    expect(proofOfPaymentIn({ proofOfPayment: { txHash: '0x12' } })).toBeNull();
    // A chain id is digits: a NUL (which jsonb refuses) or a name is none.
    for (const chainId of ['\u0000', 'base', '1\u0000', -1])
      expect(proofOfPaymentIn({ proofOfPayment: { chainId, txHash } })?.chainId, String(chainId)).toBeNull();
    expect(proofOfPaymentIn('x')).toBeNull();
  });
});
