import { formatEther } from 'viem';

/** Inputs of the score model, already in its units (docs/api.md "Scores"). */
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
    factors[key] = { value: values[key], weight: scoreWeights[key], contribution: Math.round(weighted * 1000) };
  }
  const unknown = inputs.volumeEther === 0 && inputs.transactionCount === 0 && inputs.accountAgeDays === 0;
  const score = inputs.sanctioned || unknown ? 0 : Math.min(1000, Math.max(0, Math.round(sum * 1000)));
  return { score, factors };
}
