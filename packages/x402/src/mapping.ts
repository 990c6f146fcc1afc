/**
 * How an x402 payment maps onto Vouch (docs/x402.md): pure functions, no I/O. The payer is the
 * agent Vouch decides about, `payTo` the counterparty it screens, the amount is in the asset's
 * atomic units and the asset a CAIP-19 id; one idempotency key per payment makes every Vouch
 * call for it safe to repeat.
 */

import { keccak256, stringToBytes } from 'viem';

/** What the hooks read of an x402 v2 payment payload (a structural subset of `PaymentPayload`). */
export interface PaymentPayloadLike {
  readonly x402Version: number;
  readonly accepted?: RequirementsLike;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly resource?: { readonly url?: string };
}

/** What the hooks read of x402 payment requirements (a structural subset of `PaymentRequirements`). */
export interface RequirementsLike {
  readonly scheme: string;
  readonly network: string;
  readonly asset: string;
  readonly amount: string;
  readonly payTo: string;
  readonly maxTimeoutSeconds: number;
  /** The token's EIP-712 domain (`name`, `version`) for EIP-3009. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** The payment as Vouch sees it. */
export interface PaymentFacts {
  /** The agent that pays (lowercase address): the decision's `agent`. */
  payer: string;
  /** Who is paid (lowercase address): the decision's `counterparty`, screened. */
  payTo: string;
  /** What the payer signed for, in the asset's atomic units: the whole price (`exact`) or the maximum (`upto`). */
  amount: string;
  /** CAIP-19: `eip155:<chainId>/erc20:<token>`. */
  asset: string;
  scheme: string;
  network: string;
  /** The `Idempotency-Key` of every Vouch call for this payment. */
  idempotencyKey: string;
  /** The signed authorization's nonce, which the chain lets settle once: the payment's key, and in the decision's body. */
  nonce: string;
  /**
   * A digest of the payload's signature, in the decision's body: the same authorization with
   * another signature (a copy whose signature is broken, or one signed again) is another body under
   * the key, which Vouch refuses, so that it can neither take nor release the payment's hold.
   */
  signature: string;
  /** How long the hold lives: the requirements' maxTimeoutSeconds plus a minute (no signed deadline is later). */
  holdSeconds: number;
  /** The paid resource's URL, stored with the decision. */
  resource: string | null;
}

export type Described = { ok: true; payment: PaymentFacts } | { ok: false; reason: string; message: string };

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT = /^(0|[1-9]\d{0,77})$/;
const EIP155 = /^eip155:([1-9]\d{0,17})$/;
const MAX_UINT256 = 2n ** 256n - 1n;
/** Vouch's longest hold (docs/api.md "Holds"). */
const MAX_HOLD_SECONDS = 30 * 86_400;
/** Slack after the authorization's own deadline, for a settlement already on its way to the chain. */
export const HOLD_MARGIN_SECONDS = 60;
/**
 * How much later than `maxTimeoutSeconds` from now a signed deadline may be: the payer's clock
 * may run ahead of the server's. Half the hold's margin, so that a settlement mined just before
 * the deadline still finds its hold there, with 30 s to capture it.
 */
export const CLOCK_SKEW_SECONDS = 30;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `eip155:8453` → 8453; anything else (another chain family, a malformed id) → null. */
export function evmChainId(network: string): number | null {
  const match = EIP155.exec(network);
  return match ? Number(match[1]) : null;
}

/** The CAIP-19 id of an ERC-20 on an EVM network (lowercase), or null when either is not one. */
export function caip19(network: string, asset: string): string | null {
  const chainId = evmChainId(network);
  if (chainId === null || !ADDRESS.test(asset)) return null;
  return `eip155:${chainId}/erc20:${asset.toLowerCase()}`;
}

/**
 * The signed authorization inside an EVM payload and its kind: EIP-3009 (`authorization`, the
 * `exact` scheme on tokens such as USDC) or Permit2 (`permit2Authorization`, `exact` via Permit2
 * and `upto`). A payload carrying both has none: which of them moves the money is not Vouch's to
 * guess (the facilitator prefers Permit2, a reader of `authorization` would judge the other).
 */
function authorizationOf(
  payload: PaymentPayloadLike,
): { kind: 'eip3009' | 'permit2'; fields: Record<string, unknown> } | null {
  const { eip3009, permit2 } = authorizationsIn(payload);
  if (eip3009 && permit2) return null;
  if (eip3009) return { kind: 'eip3009', fields: eip3009 };
  if (permit2) return { kind: 'permit2', fields: permit2 };
  return null;
}

/** The EIP-3009 and the Permit2 authorization a payload carries, each null when absent. */
function authorizationsIn(payload: PaymentPayloadLike) {
  const inner = isRecord(payload.payload) ? payload.payload : {};
  return {
    eip3009: isRecord(inner.authorization) ? inner.authorization : null,
    permit2: isRecord(inner.permit2Authorization) ? inner.permit2Authorization : null,
  };
}

/** The payer's address (lowercase) as signed in the payload, or null. */
export function payerOf(payload: PaymentPayloadLike): string | null {
  const from = authorizationOf(payload)?.fields.from;
  return typeof from === 'string' && ADDRESS.test(from) ? from.toLowerCase() : null;
}

/**
 * The authorization's nonce, in one spelling per value, or null: EIP-3009's is 32 bytes (0x and 64
 * hex digits, lowercased); Permit2's is a uint256, written in decimal whether it came in decimal
 * or in hex (`"1"` and `"0x1"` sign the same; two spellings must not make two payments of one).
 */
export function nonceOf(payload: PaymentPayloadLike): string | null {
  const authorization = authorizationOf(payload);
  const nonce = authorization?.fields.nonce;
  if (typeof nonce !== 'string') return null;
  if (authorization?.kind === 'eip3009') return /^0x[0-9a-fA-F]{64}$/.test(nonce) ? nonce.toLowerCase() : null;
  if (!UINT.test(nonce) && !/^0x[0-9a-fA-F]{1,64}$/.test(nonce)) return null;
  const value = BigInt(nonce);
  return value <= MAX_UINT256 ? value.toString() : null;
}

/**
 * The amount the payer signed for, in atomic units: EIP-3009's `value`, Permit2's
 * `permitted.amount` — each read from its own kind of authorization only (a field the other
 * kind's signature does not cover is ignored). This is what the facilitator checks against the
 * requirements and what moves; `accepted.amount` is the client's copy of the requirements, which
 * no signature covers.
 */
export function signedAmountOf(payload: PaymentPayloadLike): string | null {
  const authorization = authorizationOf(payload);
  if (!authorization) return null;
  const { fields } = authorization;
  const amount =
    authorization.kind === 'eip3009' ? fields.value : isRecord(fields.permitted) ? fields.permitted.amount : undefined;
  return typeof amount === 'string' && UINT.test(amount) ? amount : null;
}

/**
 * The signed time (unix seconds) after which the authorization cannot settle: EIP-3009's
 * `validBefore`, Permit2's `deadline`, each from its own kind only; null when there is none that
 * reads as a uint256.
 */
export function signedDeadlineOf(payload: PaymentPayloadLike): bigint | null {
  const authorization = authorizationOf(payload);
  if (!authorization) return null;
  const deadline = authorization.kind === 'eip3009' ? authorization.fields.validBefore : authorization.fields.deadline;
  return typeof deadline === 'string' && UINT.test(deadline) ? BigInt(deadline) : null;
}

/** keccak256 of the payload's signature as sent (hex lowercased; '' when it carries none). */
export function signatureDigestOf(payload: PaymentPayloadLike): string {
  const inner = isRecord(payload.payload) ? payload.payload : {};
  const signature = typeof inner.signature === 'string' ? inner.signature : '';
  return keccak256(stringToBytes(/^0x[0-9a-fA-F]*$/.test(signature) ? signature.toLowerCase() : signature));
}

/**
 * The `Idempotency-Key` of every Vouch call for one payment: the signed authorization's nonce,
 * which the chain lets settle once, with the network and payer (two payers' nonces never meet).
 * Not the client's payment-identifier extension: that is the sender's choice and signed by no one,
 * and a copy of a payment sent under another identifier must stay the one payment Vouch decided
 * about, not become another decision and another hold (docs/x402.md "One key per payment").
 */
export function idempotencyKeyOf(network: string, payer: string, nonce: string): string {
  return `x402:${network}:${payer}:nonce:${nonce}`;
}

/**
 * Reads a payment for Vouch. `requirements` are the server's (the payTo, asset and network the
 * payment must match); the amount is the one the payer signed (`signedAmountOf`), the same in
 * every hook of the payment — for `upto`, the maximum, whatever is settled later. A payload whose
 * `accepted.amount` says otherwise is refused: Vouch would judge one amount while another moves.
 * The hold lasts `maxTimeoutSeconds` plus a margin; an authorization whose signed deadline
 * (`signedDeadlineOf`) is later than that from `now` is refused, as it could outlive its hold.
 */
export function describePayment(
  payload: PaymentPayloadLike,
  requirements: RequirementsLike,
  now: Date = new Date(),
): Described {
  const refuse = (message: string): Described => ({ ok: false, reason: 'vouch_unsupported_payment', message });
  if (payload.x402Version !== 2 || !payload.accepted) return refuse('only x402 v2 payloads are checked with Vouch');
  const { network, payTo, asset: token, scheme } = requirements;
  const asset = caip19(network, token);
  if (!asset) return refuse(`not an ERC-20 on an EVM network: ${network} ${token}`);
  if (!ADDRESS.test(payTo)) return refuse(`payTo is not an EVM address: ${payTo}`);
  const { eip3009, permit2 } = authorizationsIn(payload);
  if (eip3009 && permit2)
    return refuse('the payload carries both an EIP-3009 and a Permit2 authorization: which one moves is not clear');
  const payer = payerOf(payload);
  if (!payer) return refuse('the payload names no EVM payer (EIP-3009 or Permit2 authorization)');
  const nonce = nonceOf(payload);
  if (!nonce) return refuse('the payload carries no authorization nonce');
  const amount = signedAmountOf(payload);
  if (amount === null || BigInt(amount) === 0n || BigInt(amount) > MAX_UINT256)
    return refuse(`the signed amount is not a positive integer of atomic units: ${String(amount)}`);
  if (payload.accepted.amount !== amount)
    return refuse(
      `the payload accepts ${String(payload.accepted.amount)} but its authorization is signed for ${amount}`,
    );
  // The hold's length is part of the decision's body, which must be the same in every hook of the
  // payment (one idempotency key): it comes from the requirements, not from the clock.
  const timeout = Number.isInteger(requirements.maxTimeoutSeconds) ? requirements.maxTimeoutSeconds : 0;
  const holdSeconds = Math.min(MAX_HOLD_SECONDS, Math.max(1, timeout) + HOLD_MARGIN_SECONDS);
  // An authorization that could still settle after its hold is gone would move money uncounted:
  // one without a deadline Vouch can read, or with a later one (a "never expires" 2^256 − 1), is refused.
  const deadline = signedDeadlineOf(payload);
  if (deadline === null) return refuse('the authorization carries no deadline (validBefore, deadline) Vouch can read');
  if (deadline > BigInt(Math.floor(now.getTime() / 1000) + holdSeconds - HOLD_MARGIN_SECONDS + CLOCK_SKEW_SECONDS))
    return refuse(
      `the authorization can settle until ${deadline}, too close to the end of the ${holdSeconds} s hold Vouch ` +
        'makes for it (maxTimeoutSeconds + 60 s) to be captured in it: sign it for at most maxTimeoutSeconds',
    );
  const resource = typeof payload.resource?.url === 'string' ? payload.resource.url.slice(0, 2048) : null;
  return {
    ok: true,
    payment: {
      payer,
      payTo: payTo.toLowerCase(),
      amount,
      asset,
      scheme,
      network,
      idempotencyKey: idempotencyKeyOf(network, payer, nonce),
      nonce,
      signature: signatureDigestOf(payload),
      holdSeconds,
      resource,
    },
  };
}

/** The body of `POST /api/decisions` for a payment: decide about the payer, screen payTo, hold the amount. */
export function decisionRequest(payment: PaymentFacts, options: { category?: string } = {}) {
  return {
    agent: payment.payer,
    amount: payment.amount,
    asset: payment.asset,
    counterparty: payment.payTo,
    ...(options.category && { category: options.category }),
    context: {
      x402: {
        scheme: payment.scheme,
        network: payment.network,
        nonce: payment.nonce,
        signature: payment.signature,
        ...(payment.resource && { resource: payment.resource }),
      },
    },
    hold: true,
    expiresIn: payment.holdSeconds,
  };
}
export type DecisionRequest = ReturnType<typeof decisionRequest>;

/** What the hooks read of a Vouch decision. */
export interface DecisionLike {
  decisionId: string;
  decision: 'allow' | 'deny' | 'review';
  reasons: ReadonlyArray<{ code: string; detail: string }>;
  /** `screening`: on a hold read as it is now, what the sanctions screen would find if it were captured now. */
  authorization: { authorizationId: string; status: string; screening?: string | null | undefined } | null;
  approvalId: string | null;
}

export type Verdict =
  | { proceed: true; authorizationId: string | null }
  | { proceed: false; reason: string; message: string; voids?: string };

/** What a review does to the payment: abort it (default; pay again once approved), or let it through. */
export type ReviewMode = 'abort' | 'allow';

/**
 * Whether the payment goes on. `deny` aborts with the decision's reason codes; `review` aborts
 * too unless configured otherwise (an approval is pending: the payment can be made again once a
 * person approved it); `allow` goes on with the hold the settlement will capture.
 */
export function verdictOf(decision: DecisionLike, review: ReviewMode = 'abort'): Verdict {
  const message = `Vouch decision ${decision.decisionId}: ${decision.decision}${
    decision.reasons.length ? ` — ${decision.reasons.map((r) => `${r.code}: ${r.detail}`).join('; ')}` : ''
  }${decision.approvalId ? ` (approval ${decision.approvalId})` : ''}`;
  const reason = (kind: string) =>
    `vouch_${kind}:${
      decision.reasons
        .filter((r) => ['deny', 'review'].includes(effectOf(r.code)))
        .map((r) => r.code)
        .join(',') || kind
    }`;
  if (decision.decision === 'deny') return { proceed: false, reason: reason('deny'), message };
  if (decision.decision === 'review') {
    if (review === 'allow') return { proceed: true, authorizationId: null };
    return { proceed: false, reason: reason('review'), message };
  }
  const hold = decision.authorization;
  if (hold && hold.status !== 'held')
    return {
      proceed: false,
      reason: `vouch_hold_${hold.status}`,
      message: `${message}; its hold ${hold.authorizationId} is ${hold.status}: this payment was already settled or released`,
    };
  // The screen as it is now (a list imported since the decision, or none active): the money would
  // move against it, so the payment stops here and its hold is released.
  if (hold?.screening)
    return {
      proceed: false,
      reason: `vouch_deny:${hold.screening}`,
      message: `${message}; the sanctions screen now refuses its hold ${hold.authorizationId}: ${hold.screening}`,
      voids: hold.authorizationId,
    };
  return { proceed: true, authorizationId: hold?.authorizationId ?? null };
}

/** Reason codes that ask for review; every other code that is not an explanation denies (docs/api.md). */
const REVIEW_CODES = new Set(['POLICY_REVIEW']);
const NEUTRAL_CODES = new Set(['POLICY_ALLOW', 'NO_POLICY', 'APPROVAL_REDEEMED']);
function effectOf(code: string): 'deny' | 'review' | 'none' {
  if (REVIEW_CODES.has(code)) return 'review';
  return NEUTRAL_CODES.has(code) ? 'none' : 'deny';
}

/**
 * What was settled, in atomic units: the facilitator's `amount` when it says (an `upto`
 * settlement), else the settled requirements' amount (`exact`: the price; `upto`: the amount the
 * server asked to settle).
 */
export function settledAmountOf(result: { amount?: string }, requirements: { amount: string }): bigint | null {
  const amount = result.amount ?? requirements.amount;
  return typeof amount === 'string' && UINT.test(amount) ? BigInt(amount) : null;
}

/**
 * Failures that moved no money for sure: the facilitator refused the payment before it sent
 * anything (a signature, amount, recipient, time window, balance or allowance that does not
 * hold, a simulation that reverted): the reasons @x402/evm and @x402/core 2.27.0 give for it.
 * Anything else — a used nonce (another attempt of the payment settled, or is settling), a
 * transaction that failed or is pending, events that did not match, and any reason not listed
 * here (@x402/evm reports an error thrown while sending or waiting as its bare message) — may
 * have moved money.
 */
const NOTHING_MOVED = new Set([
  'invalid_scheme',
  'unsupported_payload_type',
  'extension_echo_mismatch',
  'invalid_exact_evm_signature',
  'invalid_exact_evm_failed_to_parse_signature',
  'invalid_exact_evm_recipient_mismatch',
  'invalid_exact_evm_payload_authorization_value_mismatch',
  'invalid_exact_evm_payload_authorization_valid_before',
  'invalid_exact_evm_payload_authorization_valid_after',
  'invalid_exact_evm_insufficient_balance',
  'invalid_exact_evm_network_mismatch',
  'invalid_exact_evm_scheme',
  'invalid_exact_evm_missing_eip712_domain',
  'invalid_exact_evm_token_name_mismatch',
  'invalid_exact_evm_token_version_mismatch',
  'invalid_exact_evm_eip3009_not_supported',
  'invalid_exact_evm_authorization_value',
  'invalid_exact_evm_transaction_simulation_failed',
  'invalid_upto_evm_scheme',
  'invalid_upto_evm_network_mismatch',
  'invalid_upto_evm_payload_settlement_exceeds_amount',
  'invalid_permit2_signature',
  'invalid_permit2_spender',
  'invalid_permit2_recipient_mismatch',
  'permit2_allowance_required',
  'permit2_token_mismatch',
  'permit2_simulation_failed',
  'permit2_proxy_not_deployed',
  'permit2_payment_too_early',
  'permit2_not_yet_valid',
  'permit2_invalid_owner',
  'permit2_invalid_destination',
  'permit2_invalid_amount',
  'permit2_insufficient_balance',
  'permit2_deadline_expired',
  'permit2_amount_mismatch',
  // Verification's own refusals (settle verifies first): an upto authorization signed for another
  // facilitator, an asset with no contract, an ERC-6492 wallet of a factory not allowed (refused
  // before its deployment is sent).
  'upto_facilitator_mismatch',
  'asset_not_deployed_contract',
  'eip6492_factory_not_allowed',
]);

/**
 * Whether a failed verification or settlement releases the hold: only one that moved no money for
 * sure (`NOTHING_MOVED`). One that names a transaction was broadcast, whatever its reason says:
 * it may have moved money. A hold kept is captured by the attempt that settled, or expires.
 */
export function releasesHold(failure: { errorReason?: string; transaction?: string } | null): boolean {
  if (!failure) return false; // a thrown error (timeout, network): the outcome is not known
  if (typeof failure.transaction === 'string' && failure.transaction !== '') return false;
  return failure.errorReason !== undefined && NOTHING_MOVED.has(failure.errorReason);
}
