/**
 * How ERC-8004 feedback becomes score evidence (docs/checks.md "ERC-8004 feedback"): a bounded
 * adjustment of the model's score, never a sixth factor, so the five factors and
 * `POST /api/scores/compute` keep their meaning. Pure functions; the service feeds them rows.
 */

/** tag1 values read as a 0–100 rating: none (v1's `score`), the spec's `starred`, and Vouch's own. */
export const RATING_TAGS: ReadonlySet<string> = new Set(['', 'starred', 'vouch-score']);
/** The most the feedback moves a score, up or down (points of 1000). */
export const MAX_ADJUSTMENT = 100;
/** Counted weight at which the adjustment reaches its full size (five reviews of fully trusted clients). */
export const FULL_CONFIDENCE_WEIGHT = 5;
/** The standing of a client Vouch knows nothing about. */
export const UNKNOWN_CLIENT_WEIGHT = 0.1;
/** Feedback backed by a payment Vouch recorded counts this many times more (at most weight 1). */
export const PAYMENT_MULTIPLIER = 3;
/** Vouch's own exports: tag1, and the score model's version in tag2. */
export const EXPORT_TAG = 'vouch-score';
export const SCORE_MODEL_VERSION = '2';

/** The feedback counts of an agent nothing has been indexed for. */
export const emptyFeedbackCounts = () => ({
  total: 0,
  counted: 0,
  revoked: 0,
  notARating: 0,
  selfRelated: 0,
  sanctionedClients: 0,
  superseded: 0,
  unknownClients: 0,
  paymentBacked: 0,
});

export type IndexStatus = 'not_configured' | 'not_indexed' | 'current' | 'behind' | 'unavailable';

export interface ProofOfPayment {
  fromAddress: string | null;
  toAddress: string | null;
  chainId: string | null;
  txHash: string;
}

/** One feedback on the agent's identity, with what Vouch knows of its client. */
export interface FeedbackFacts {
  client: string;
  feedbackIndex: string;
  /** int128, decimal. */
  value: string;
  decimals: number;
  tag1: string;
  tag2: string;
  revoked: boolean;
  responses: number;
  proofOfPayment: ProofOfPayment | null;
  /** The client is an agent Vouch knows (registered or observed); its stored score is its standing. */
  clientScore: number | null;
  clientSanctioned: boolean;
  /** The client is the agent itself, its owner, its wallet, its registered owner in Vouch, or a wallet of another identity of the same owner. */
  clientSelfRelated: boolean;
  /** `proofOfPayment` names a transaction recorded in Vouch, counted by the score model, from the client to the agent. */
  paymentBacked: boolean;
}

export type FeedbackVerdict =
  | 'counted'
  | 'revoked'
  | 'not_a_rating'
  | 'self_related'
  | 'sanctioned_client'
  | 'superseded';

export interface WeighedFeedback {
  verdict: FeedbackVerdict;
  /** The value on the 0–100 scale; null when it is not a rating. */
  rating: number | null;
  weight: number;
}

/** The value as a number: value ÷ 10^decimals (exact enough for a 0–100 rating). */
export function ratingValue(value: string, decimals: number): number {
  return Number(value) / 10 ** decimals;
}

/**
 * Whether value ÷ 10^decimals is within 0–100, compared exactly: an int128 as a double is rounded
 * (100.000000000000000001 is 100 there), and a value outside the bounds is no rating however close.
 */
function inRatingRange(value: string, decimals: number): boolean {
  const v = BigInt(value);
  return v >= 0n && v <= 100n * 10n ** BigInt(decimals);
}

/** The weight one feedback gets: 0 unless it is a live rating from a client that is not the agent's own. */
export function weigh(f: FeedbackFacts): WeighedFeedback {
  const rating = RATING_TAGS.has(f.tag1) ? ratingValue(f.value, f.decimals) : null;
  const isRating = rating !== null && inRatingRange(f.value, f.decimals);
  if (f.revoked) return { verdict: 'revoked', rating: isRating ? rating : null, weight: 0 };
  if (!isRating) return { verdict: 'not_a_rating', rating: null, weight: 0 };
  if (f.clientSelfRelated) return { verdict: 'self_related', rating, weight: 0 };
  if (f.clientSanctioned) return { verdict: 'sanctioned_client', rating, weight: 0 };
  const standing =
    f.clientScore === null ? UNKNOWN_CLIENT_WEIGHT : Math.max(UNKNOWN_CLIENT_WEIGHT, f.clientScore / 1000);
  const weight = Math.min(1, standing * (f.paymentBacked ? PAYMENT_MULTIPLIER : 1));
  return { verdict: 'counted', rating, weight: round3(weight) };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/**
 * One client, one voice: of the ratings one client gave an agent that would count, only its
 * latest (the highest feedbackIndex) does; the earlier ones are `superseded`, weight 0. Otherwise
 * one wallet repeating a review fifty times would weigh as fifty clients.
 */
export function latestPerClient(
  items: ReadonlyArray<{ client: string; feedbackIndex: string; weighed: WeighedFeedback }>,
): WeighedFeedback[] {
  const latest = new Map<string, bigint>();
  for (const { client, feedbackIndex, weighed } of items) {
    if (weighed.verdict !== 'counted') continue;
    const index = BigInt(feedbackIndex);
    const seen = latest.get(client);
    if (seen === undefined || index > seen) latest.set(client, index);
  }
  return items.map(({ client, feedbackIndex, weighed }) =>
    weighed.verdict === 'counted' && BigInt(feedbackIndex) !== latest.get(client)
      ? { verdict: 'superseded', rating: weighed.rating, weight: 0 }
      : weighed,
  );
}

export interface Adjustment {
  /** Points added to the model's score (negative: taken away); 0 without counted feedback. */
  adjustment: number;
  /** Whether it is in the score: a positive adjustment needs a current index (a trust service fails closed). */
  applied: boolean;
  /** The weighted mean rating, 0–100; null without counted feedback. */
  rating: number | null;
  /** Σ weights of the counted feedback, and the share of the full adjustment it earns. */
  weight: number;
  confidence: number;
}

/**
 * adjustment = round(MAX_ADJUSTMENT × confidence × (2 × rating/100 − 1)), where rating is the
 * weighted mean of the counted ratings and confidence = min(1, Σ weights ÷ FULL_CONFIDENCE_WEIGHT):
 * a neutral 50 moves nothing, and a few low-standing clients move little. `clientsScreened`: false
 * when no sanctions list is active, so no client could be screened (a sanctioned one counted).
 */
export function adjustmentOf(weighed: WeighedFeedback[], status: IndexStatus, clientsScreened = true): Adjustment {
  const counted = weighed.filter((w) => w.verdict === 'counted' && w.weight > 0 && w.rating !== null);
  const weight = counted.reduce((sum, w) => sum + w.weight, 0);
  if (weight === 0) return { adjustment: 0, applied: false, rating: null, weight: 0, confidence: 0 };
  const rating = counted.reduce((sum, w) => sum + w.weight * (w.rating as number), 0) / weight;
  const confidence = Math.min(1, weight / FULL_CONFIDENCE_WEIGHT);
  const adjustment = Math.round(MAX_ADJUSTMENT * confidence * ((2 * rating) / 100 - 1));
  // An index that is behind or unavailable may be missing a revocation or worse feedback, and
  // without a sanctions list a counted client may be a sanctioned one: only what lowers the score
  // is taken from it then.
  const applied = adjustment !== 0 && (adjustment < 0 || (status === 'current' && clientsScreened));
  return { adjustment, applied, rating: round3(rating), weight: round3(weight), confidence: round3(confidence) };
}

/** The model's score with the feedback's adjustment; a sanctioned agent stays at 0. */
export function withAdjustment(score: number, adjustment: Adjustment, sanctioned: boolean): number {
  if (sanctioned || !adjustment.applied) return score;
  return Math.min(1000, Math.max(0, score + adjustment.adjustment));
}

/** What `agentWallet` metadata holds: 20 bytes (the wallet), or nothing once cleared. */
export function walletOf(metadataValue: string): string | null {
  const hex = metadataValue.toLowerCase();
  return /^0x[0-9a-f]{40}$/.test(hex) && !/^0x0{40}$/.test(hex) ? hex : null;
}

/** The proofOfPayment of a feedback file, when it names a transaction hash. */
export function proofOfPaymentIn(file: unknown): ProofOfPayment | null {
  if (!file || typeof file !== 'object') return null;
  const proof = (file as Record<string, unknown>).proofOfPayment;
  if (!proof || typeof proof !== 'object') return null;
  const p = proof as Record<string, unknown>;
  const txHash = typeof p.txHash === 'string' ? p.txHash.toLowerCase() : null;
  if (!txHash || !/^0x[0-9a-f]{64}$/.test(txHash)) return null;
  const address = (v: unknown) =>
    typeof v === 'string' && /^0x[0-9a-fA-F]{40}$/.test(v.replace(/^eip155:\d+:/, ''))
      ? v.replace(/^eip155:\d+:/, '').toLowerCase()
      : null;
  return {
    fromAddress: address(p.fromAddress),
    toAddress: address(p.toAddress),
    // A chain id is digits (EIP-155); anything else (a NUL, which jsonb refuses, say) is none.
    chainId:
      (typeof p.chainId === 'string' || typeof p.chainId === 'number') && /^\d{1,20}$/.test(String(p.chainId))
        ? String(p.chainId)
        : null,
    txHash,
  };
}
