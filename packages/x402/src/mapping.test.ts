import { keccak256, stringToBytes } from 'viem';
import { describe, expect, it } from 'vitest';
import {
  CLOCK_SKEW_SECONDS,
  caip19,
  type DecisionLike,
  decisionRequest,
  describePayment,
  evmChainId,
  HOLD_MARGIN_SECONDS,
  idempotencyKeyOf,
  nonceOf,
  type PaymentPayloadLike,
  payerOf,
  type RequirementsLike,
  releasesHold,
  settledAmountOf,
  verdictOf,
} from './mapping.ts';

const TOKEN = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const PAYER = '0x52908400098527886E0F7030069857D2E4169EE7';
const PAY_TO = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const NONCE = `0x${'ab'.repeat(32)}`;
const NOW = new Date('2026-03-01T12:00:00Z');
const nowSeconds = NOW.getTime() / 1000;

const requirements: RequirementsLike = {
  scheme: 'exact',
  network: 'eip155:84532',
  asset: TOKEN,
  amount: '10000',
  payTo: PAY_TO,
  maxTimeoutSeconds: 120,
};

function eip3009(overrides: Partial<PaymentPayloadLike> = {}): PaymentPayloadLike {
  return {
    x402Version: 2,
    accepted: requirements,
    resource: { url: 'http://127.0.0.1:4021/weather' },
    payload: {
      signature: '0x00',
      authorization: {
        from: PAYER,
        to: PAY_TO,
        value: '10000',
        validAfter: '0',
        validBefore: String(nowSeconds + 120),
        nonce: NONCE,
      },
    },
    ...overrides,
  };
}

const permit2 = (from: string, nonce: string): PaymentPayloadLike => ({
  x402Version: 2,
  accepted: { ...requirements, scheme: 'upto', amount: '50000' },
  payload: {
    signature: '0x00',
    permit2Authorization: {
      from,
      nonce,
      spender: PAY_TO,
      permitted: { token: TOKEN, amount: '50000' },
      deadline: String(nowSeconds + 120),
    },
  },
});

/** An EIP-3009 payload whose authorization is signed with `changes`. */
const eip3009Signed = (changes: Record<string, string>, accepted = requirements) =>
  eip3009({
    accepted,
    payload: {
      signature: '0x00',
      authorization: { ...(eip3009().payload.authorization as Record<string, string>), ...changes },
    },
  });

describe('assets and networks', () => {
  it('reads the chain id of an eip155 network only', () => {
    expect(evmChainId('eip155:8453')).toBe(8453);
    expect(evmChainId('eip155:*')).toBeNull();
    expect(evmChainId('eip155:0')).toBeNull();
    expect(evmChainId('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp')).toBeNull();
  });

  it('names an ERC-20 as a CAIP-19 id, lowercase, as Vouch budgets compare them', () => {
    expect(caip19('eip155:84532', TOKEN)).toBe(`eip155:84532/erc20:${TOKEN.toLowerCase()}`);
    expect(caip19('eip155:84532', 'USDC')).toBeNull();
    expect(caip19('solana:mainnet', TOKEN)).toBeNull();
  });
});

describe('the payer, the nonce and the key', () => {
  it('reads the payer and nonce of an EIP-3009 authorization and of a Permit2 one', () => {
    expect(payerOf(eip3009())).toBe(PAYER.toLowerCase());
    expect(nonceOf(eip3009())).toBe(NONCE);
    expect(payerOf(permit2(PAYER, '123456789'))).toBe(PAYER.toLowerCase());
    expect(nonceOf(permit2(PAYER, '123456789'))).toBe('123456789');
  });

  it('finds nothing in a payload of another shape', () => {
    const other = eip3009({ payload: { transaction: 'AQID' } });
    expect(payerOf(other)).toBeNull();
    expect(nonceOf(other)).toBeNull();
    expect(payerOf(permit2('not-an-address', '1'))).toBeNull();
    expect(nonceOf(permit2(PAYER, '-1'))).toBeNull();
    // One spelling per value: a Permit2 nonce in hex is its decimal; EIP-3009's is 32 bytes.
    expect(nonceOf(permit2(PAYER, '0x1F'))).toBe('31');
    expect(nonceOf(permit2(PAYER, '31'))).toBe('31');
    expect(nonceOf(permit2(PAYER, (2n ** 256n).toString()))).toBeNull();
    const short = eip3009({
      payload: { signature: '0x00', authorization: { ...(eip3009().payload.authorization as object), nonce: '0x1' } },
    });
    expect(nonceOf(short)).toBeNull();
  });

  it('keys every Vouch call of a payment by its signed nonce, scoped to network and payer', () => {
    const payer = PAYER.toLowerCase();
    expect(idempotencyKeyOf('eip155:8453', payer, NONCE)).toBe(`x402:eip155:8453:${payer}:nonce:${NONCE}`);
    // The client's payment-identifier is not part of it: a copy under another identifier is the same payment.
    const withId = (id: string): PaymentPayloadLike => {
      const payload = { ...eip3009(), extensions: { 'payment-identifier': { info: { required: false, id } } } };
      return payload;
    };
    const keyOf = (payload: PaymentPayloadLike) => {
      const described = describePayment(payload, requirements, NOW);
      return described.ok ? described.payment.idempotencyKey : described.message;
    };
    expect(keyOf(withId('pay_0123456789abcdef'))).toBe(keyOf(withId('pay_fedcba9876543210')));
    expect(keyOf(withId('pay_0123456789abcdef'))).toBe(keyOf(eip3009()));
    // Vouch accepts 1–255 printable ASCII characters; a Permit2 nonce is at most 78 digits.
    const longest = idempotencyKeyOf('eip155:999999999999999999', payer, '9'.repeat(78));
    expect(longest.length).toBeLessThanOrEqual(255);
    expect(longest).toMatch(/^[\x21-\x7e]+$/);
  });
});

describe('describePayment', () => {
  it('maps a payment: payer = agent, payTo = counterparty, signed amount in atomic units, CAIP-19 asset', () => {
    const described = describePayment(eip3009(), requirements, NOW);
    expect(described).toEqual({
      ok: true,
      payment: {
        payer: PAYER.toLowerCase(),
        payTo: PAY_TO.toLowerCase(),
        amount: '10000',
        asset: `eip155:84532/erc20:${TOKEN.toLowerCase()}`,
        scheme: 'exact',
        network: 'eip155:84532',
        idempotencyKey: `x402:eip155:84532:${PAYER.toLowerCase()}:nonce:${NONCE}`,
        nonce: NONCE,
        signature: keccak256(stringToBytes('0x00')),
        holdSeconds: 120 + HOLD_MARGIN_SECONDS,
        resource: 'http://127.0.0.1:4021/weather',
      },
    });
  });

  it('tells one signature of an authorization from another, however it is spelled', () => {
    const withSignature = (signature: string) => {
      const d = describePayment(eip3009({ payload: { ...eip3009().payload, signature } }), requirements, NOW);
      return d.ok ? d.payment.signature : d.message;
    };
    expect(withSignature(`0x${'AB'.repeat(65)}`)).toBe(withSignature(`0x${'ab'.repeat(65)}`));
    // One byte more (a broken copy) is another signature, so another body under the payment's key.
    expect(withSignature(`0x${'ab'.repeat(65)}00`)).not.toBe(withSignature(`0x${'ab'.repeat(65)}`));
    expect(withSignature(`0x${'ab'.repeat(65)}`)).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('holds the maximum of an upto payment, whatever the settlement will ask for', () => {
    const settleRequirements = { ...requirements, scheme: 'upto', amount: '1234' };
    const described = describePayment(permit2(PAYER, '7'), settleRequirements, NOW);
    expect(described.ok && described.payment.amount).toBe('50000');
  });

  it('reads the amount and the deadline of a Permit2 authorization from the fields its signature covers', () => {
    // `value` and `validBefore` are EIP-3009's: beside a Permit2 authorization no signature covers them.
    const base = permit2(PAYER, '7');
    const inner = base.payload.permit2Authorization as Record<string, unknown>;
    const dressed = {
      ...base,
      accepted: { ...requirements, scheme: 'upto', amount: '1' },
      payload: {
        ...base.payload,
        permit2Authorization: { ...inner, value: '1', validBefore: String(nowSeconds + 60) },
      },
    };
    expect(describePayment(dressed, requirements, NOW)).toMatchObject({
      ok: false,
      message: 'the payload accepts 1 but its authorization is signed for 50000',
    });
    const forever = {
      ...base,
      payload: {
        ...base.payload,
        permit2Authorization: { ...inner, deadline: (2n ** 256n - 1n).toString(), validBefore: String(nowSeconds) },
      },
    };
    expect(describePayment(forever, requirements, NOW)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/can settle until 1157920892/),
    });
  });

  it('refuses a payload carrying both an EIP-3009 and a Permit2 authorization', () => {
    const both = {
      ...eip3009(),
      payload: { ...eip3009().payload, permit2Authorization: permit2(PAYER, '7').payload.permit2Authorization },
    };
    expect(describePayment(both, requirements, NOW)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/both an EIP-3009 and a Permit2 authorization/),
    });
    expect([payerOf(both), nonceOf(both)]).toEqual([null, null]);
  });

  it('refuses what Vouch cannot judge, saying why', () => {
    const refused = (payload: PaymentPayloadLike, reqs = requirements) => {
      const d = describePayment(payload, reqs, NOW);
      return d.ok ? null : d.message;
    };
    expect(refused(eip3009({ x402Version: 1 }))).toMatch(/v2/);
    expect(refused(eip3009(), { ...requirements, network: 'solana:mainnet' })).toMatch(/EVM/);
    expect(refused(eip3009(), { ...requirements, payTo: 'GxYz' })).toMatch(/payTo/);
    expect(refused(eip3009({ payload: {} }))).toMatch(/payer/);
    for (const value of ['0', '1e6', (2n ** 256n).toString()]) {
      expect(refused(eip3009Signed({ value }, { ...requirements, amount: value }))).toMatch(/positive/);
    }
  });

  it('judges the amount the payer signed, and refuses a payload whose accepted amount says otherwise', () => {
    // The client's copy of the requirements is not signed: 1 there while 1,000,000 moves.
    const cheap = describePayment(
      eip3009Signed({ value: '1000000' }, { ...requirements, amount: '1' }),
      { ...requirements, amount: '1000000' },
      NOW,
    );
    expect(cheap.ok ? null : cheap.message).toBe('the payload accepts 1 but its authorization is signed for 1000000');
    const permit = permit2(PAYER, '7');
    const mismatched = describePayment({ ...permit, accepted: { ...requirements, amount: '5' } }, requirements, NOW);
    expect(mismatched.ok ? null : mismatched.message).toMatch(/signed for 50000/);
  });

  it('holds for maxTimeoutSeconds plus a margin, and refuses an authorization that could outlive its hold', () => {
    const described = (payload: PaymentPayloadLike, reqs = requirements, now = NOW) => {
      const d = describePayment(payload, reqs, now);
      return d.ok ? d.payment.holdSeconds : d.message;
    };
    expect(described(eip3009())).toBe(120 + HOLD_MARGIN_SECONDS);
    // The same in every hook of the payment, however late: the decision's body does not change.
    expect(described(eip3009(), requirements, new Date(NOW.getTime() + 100_000))).toBe(120 + HOLD_MARGIN_SECONDS);
    expect(described(permit2(PAYER, '7'), { ...requirements, maxTimeoutSeconds: 300 })).toBe(300 + HOLD_MARGIN_SECONDS);
    expect(
      described(eip3009Signed({ validBefore: String(nowSeconds + 20 * 86_400) }), {
        ...requirements,
        maxTimeoutSeconds: 10 ** 9,
      }),
    ).toBe(30 * 86_400);
    // Signed to settle for a day while the hold lasts three minutes, or for ever: refused.
    expect(described(eip3009Signed({ validBefore: String(nowSeconds + 86_400) }))).toMatch(
      /can settle until \d+, too close to the end of the 180 s hold/,
    );
    expect(described(eip3009Signed({ validBefore: (2n ** 256n - 1n).toString() }))).toMatch(/the 180 s hold/);
    // Up to 30 s past maxTimeoutSeconds for a payer's clock ahead of the server's; never so late
    // that a settlement mined at the deadline could not be captured within the hold.
    expect(described(eip3009Signed({ validBefore: String(nowSeconds + 120 + CLOCK_SKEW_SECONDS) }))).toBe(180);
    expect(described(eip3009Signed({ validBefore: String(nowSeconds + 120 + CLOCK_SKEW_SECONDS + 1) }))).toMatch(
      /too close to the end of the 180 s hold/,
    );
    expect(described(eip3009Signed({ validBefore: String(nowSeconds + 180) }))).toMatch(/too close/);
    // No deadline that reads: refused too.
    expect(described(eip3009Signed({ validBefore: 'soon' }))).toMatch(/no deadline/);
  });
});

describe('decisionRequest', () => {
  it('asks for a decision with a hold, the same body in every hook of the payment', () => {
    const d = describePayment(eip3009(), requirements, NOW);
    if (!d.ok) throw new Error(d.message);
    expect(decisionRequest(d.payment, { category: 'api' })).toEqual({
      agent: PAYER.toLowerCase(),
      amount: '10000',
      asset: `eip155:84532/erc20:${TOKEN.toLowerCase()}`,
      counterparty: PAY_TO.toLowerCase(),
      category: 'api',
      context: {
        x402: {
          scheme: 'exact',
          network: 'eip155:84532',
          nonce: NONCE,
          signature: keccak256(stringToBytes('0x00')),
          resource: 'http://127.0.0.1:4021/weather',
        },
      },
      hold: true,
      expiresIn: 180,
    });
  });
});

describe('verdictOf', () => {
  const decision = (overrides: Partial<DecisionLike>): DecisionLike => ({
    decisionId: '7',
    decision: 'allow',
    reasons: [{ code: 'NO_POLICY', detail: 'no policy applies' }],
    authorization: { authorizationId: '3', status: 'held' },
    approvalId: null,
    ...overrides,
  });

  it('lets an allow go on with its hold', () => {
    expect(verdictOf(decision({}))).toEqual({ proceed: true, authorizationId: '3' });
  });

  it('aborts a deny with the reasons that denied', () => {
    const v = verdictOf(
      decision({
        decision: 'deny',
        authorization: null,
        reasons: [
          { code: 'DAILY_LIMIT', detail: 'over the daily limit' },
          { code: 'COUNTERPARTY_SANCTIONED', detail: 'on the list' },
          { code: 'NO_POLICY', detail: 'no policy applies' },
        ],
      }),
    );
    expect(v).toMatchObject({ proceed: false, reason: 'vouch_deny:DAILY_LIMIT,COUNTERPARTY_SANCTIONED' });
    expect(v.proceed || v.message).toMatch(/decision 7: deny — DAILY_LIMIT: over the daily limit/);
  });

  it('aborts a review unless configured to let it through', () => {
    const review = decision({
      decision: 'review',
      reasons: [{ code: 'POLICY_REVIEW', detail: 'rule big' }],
      authorization: { authorizationId: '3', status: 'pending_approval' },
      approvalId: '11',
    });
    expect(verdictOf(review)).toMatchObject({ proceed: false, reason: 'vouch_review:POLICY_REVIEW' });
    expect(verdictOf(review, 'allow')).toEqual({ proceed: true, authorizationId: null });
  });

  it('aborts a payment whose hold was already captured, voided or expired (a retry of a finished payment)', () => {
    for (const status of ['captured', 'voided', 'expired'])
      expect(verdictOf(decision({ authorization: { authorizationId: '3', status } }))).toMatchObject({
        proceed: false,
        reason: `vouch_hold_${status}`,
      });
  });
});

describe('after settlement', () => {
  it('captures what was settled: the facilitator’s amount, else the settled requirements’', () => {
    expect(settledAmountOf({ amount: '1234' }, { amount: '50000' })).toBe(1234n);
    expect(settledAmountOf({}, { amount: '10000' })).toBe(10000n);
    expect(settledAmountOf({ amount: 'lots' }, { amount: '1' })).toBeNull();
  });

  it('voids the hold only when a failed settlement surely moved no money', () => {
    expect(releasesHold({ errorReason: 'invalid_exact_evm_insufficient_balance' })).toBe(true);
    expect(releasesHold({ errorReason: 'settlement_pending' })).toBe(false);
    expect(releasesHold({ errorReason: 'invalid_exact_evm_nonce_already_used' })).toBe(false);
    expect(releasesHold(null)).toBe(false);
    // Tokens moved with events that did not match, and any failure that names a broadcast transaction.
    expect(releasesHold({ errorReason: 'invalid_exact_evm_transfer_event_mismatch' })).toBe(false);
    expect(
      releasesHold({ errorReason: 'invalid_exact_evm_transaction_failed', transaction: `0x${'1'.repeat(64)}` }),
    ).toBe(false);
    // Sending failed, or waiting for the receipt did (reported as the error's bare message): the
    // transaction may be on its way. Kept, as is any reason not known to move nothing.
    expect(releasesHold({ errorReason: 'invalid_exact_evm_transaction_failed', transaction: '' })).toBe(false);
    expect(releasesHold({ errorReason: 'Timed out while waiting for transaction', transaction: '' })).toBe(false);
    expect(releasesHold({ transaction: '' })).toBe(false);
    expect(releasesHold({ errorReason: 'permit2_insufficient_balance', transaction: '' })).toBe(true);
    // Refusals @x402/evm 2.27.0 makes in verification (which its settle runs first), before it sends
    // anything: an upto authorization for another facilitator, an asset with no contract, an
    // ERC-6492 wallet of a factory the facilitator does not deploy from.
    for (const errorReason of [
      'upto_facilitator_mismatch',
      'asset_not_deployed_contract',
      'eip6492_factory_not_allowed',
    ])
      expect(releasesHold({ errorReason, transaction: '' }), errorReason).toBe(true);
    // A smart wallet's deployment was sent: kept.
    expect(releasesHold({ errorReason: 'smart_wallet_deployment_failed', transaction: '' })).toBe(false);
  });
});
