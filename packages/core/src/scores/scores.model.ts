import { formatEther } from 'viem';
import { roundHalfUp } from '../shared/round.ts';

/** Inputs of the score model, already in its units (docs/api.md "Scores"). */
/** Names the score model (weights, normalizations, confidence) that produced a score or a decision. */
export const SCORE_MODEL_VERSION = 'vouch-score-1';

export interface ScoreInputs {
  successRate: number;
  /** Total volume in ether units (wei / 1e18). */
  volumeEther: number;
  transactionCount: number;
  budgetCompliance: number;
  accountAgeDays: number;
  sanctioned?: boolean;
}

export interface Factor {
  value: number;
  weight: number;
  contribution: number;
}

export interface ScoreFactors {
  successRate: Factor;
  volume: Factor;
  count: Factor;
  budgetCompliance: Factor;
  accountAge: Factor;
}

export const scoreWeights = {
  successRate: 0.3,
  volume: 0.25,
  count: 0.2,
  budgetCompliance: 0.15,
  accountAge: 0.1,
} as const;

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/** Ether units of a wei amount, as a JS number (exact enough for a logarithmic factor). */
export function weiToEther(wei: bigint): number {
  return Number(formatEther(wei));
}

/**
 * The reputation model: each factor is normalized to 0..1, weighted, and summed to
 * a 0–1000 score. A sanctioned agent scores 0, and so does one with no volume, no
 * transactions and age 0 (nothing is known about it yet).
 */
export function computeScore(inputs: ScoreInputs): { score: number; factors: ScoreFactors } {
  const normalized = {
    successRate: clamp01(inputs.successRate),
    volume: Math.min(1, Math.log10(Math.max(0, inputs.volumeEther) + 1) / 2),
    count: Math.min(1, Math.max(0, inputs.transactionCount) / 1000),
    budgetCompliance: clamp01(inputs.budgetCompliance),
    accountAge: Math.min(1, Math.max(0, inputs.accountAgeDays) / 365),
  };
  const values = {
    successRate: inputs.successRate,
    volume: inputs.volumeEther,
    count: inputs.transactionCount,
    budgetCompliance: inputs.budgetCompliance,
    accountAge: inputs.accountAgeDays,
  };
  const keys = Object.keys(scoreWeights) as Array<keyof ScoreFactors>;
  const factors = {} as ScoreFactors;
  let sum = 0;
  for (const key of keys) {
    const weighted = normalized[key] * scoreWeights[key];
    sum += weighted;
    factors[key] = { value: values[key], weight: scoreWeights[key], contribution: roundHalfUp(weighted * 1000) };
  }
  const unknown = inputs.volumeEther === 0 && inputs.transactionCount === 0 && inputs.accountAgeDays === 0;
  const score = inputs.sanctioned || unknown ? 0 : Math.min(1000, Math.max(0, roundHalfUp(sum * 1000)));
  return { score, factors };
}

/** Below this many recorded transactions counted by the model, a score rests on too little to go by. */
export const CONFIDENCE_MIN_EVIDENCE = 5;
/** And below this many days since the agent was first seen. */
export const CONFIDENCE_MIN_AGE_DAYS = 7;
/** Evidence at which the evidence factor reaches one half (saturating: 10 → 0.5, 90 → 0.9). */
const EVIDENCE_HALF = 10;
/** Days after which age no longer limits confidence. */
const AGE_FULL_DAYS = 30;

export type ScoreState = 'established' | 'insufficient_history';

/**
 * How much a score can be relied on, 0–1, from how much it rests on: the transactions the model
 * counted (n / (n + 10)) times how long the agent has been known (days / 30, at most 1), rounded half
 * up to two decimals. `insufficient_history` below CONFIDENCE_MIN_EVIDENCE transactions or
 * CONFIDENCE_MIN_AGE_DAYS days: a score of such an agent says little either way.
 */
export function confidenceOf(
  evidence: number,
  firstSeenAt: Date,
  now: Date,
): { confidence: number; state: ScoreState } {
  const n = Math.max(0, evidence);
  const ageDays = Math.max(0, (now.getTime() - firstSeenAt.getTime()) / 86_400_000);
  const confidence = roundHalfUp((n / (n + EVIDENCE_HALF)) * Math.min(1, ageDays / AGE_FULL_DAYS) * 100) / 100;
  const state =
    n < CONFIDENCE_MIN_EVIDENCE || ageDays < CONFIDENCE_MIN_AGE_DAYS ? 'insufficient_history' : 'established';
  return { confidence, state };
}
