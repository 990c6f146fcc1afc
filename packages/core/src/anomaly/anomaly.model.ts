/** The four-factor anomaly model over an agent's own recorded history. */

import { roundHalfUp } from '../shared/round.ts';

export type Severity = 'LOW' | 'MEDIUM' | 'HIGH' | 'CRITICAL';

export interface AnomalyThresholds {
  /** frequency: last-hour count against the 30-day hourly average; flagged from this ratio… */
  frequencyFlagRatio: number;
  /** …and at full risk from this one. */
  frequencyFullRatio: number;
  /** largeValue: amount against the agent's average amount. */
  valueFlagRatio: number;
  valueFullRatio: number;
  /** failureRate: judged once the agent has this many transactions in 30 days. */
  failureMinHistory: number;
  failureFlagRate: number;
  failureFullRate: number;
  /** riskScore from which an anomaly is reported. */
  detectAt: number;
}

/** The thresholds an operator sets (ANOMALY_* in @vouch/config, where their defaults live). */
export type AnomalySettings = Pick<
  AnomalyThresholds,
  'detectAt' | 'frequencyFlagRatio' | 'valueFlagRatio' | 'failureFlagRate'
>;

/** The rest of the model: where each factor reaches its full weight. */
export const anomalyModelConstants = {
  frequencyFullRatio: 10,
  valueFullRatio: 20,
  failureMinHistory: 5,
  failureFullRate: 0.5,
} as const satisfies Omit<AnomalyThresholds, keyof AnomalySettings>;

export const anomalyWeights = { frequency: 0.3, largeValue: 0.25, failureRate: 0.25, flagged: 0.2 } as const;

export interface AnomalyFacts {
  /** The agent's transactions in the hour before now (the checked one not included). */
  lastHourCount: number;
  /** Transactions and failures over the last 30 days (or the agent's life if shorter), of every asset. */
  count30d: number;
  failed30d: number;
  /**
   * The count and volume of those in the checked amount's own asset: the average amount is
   * theirs, since amounts of different assets are not comparable (Vouch holds no prices).
   */
  assetCount30d: number;
  volume30d: bigint;
  /** Hours of history the 30-day figures cover: min(30 days, time since first known), at least 1. */
  historyHours: number;
  amount: bigint;
  agentSanctioned: boolean;
  /** The agent's registered owner is on the list. */
  ownerSanctioned?: boolean;
  counterpartySanctioned: boolean;
  /** No sanctions list is active: nobody could be screened. */
  sanctionsListUnavailable?: boolean;
  /** The agent's latest verification was SUSPICIOUS. */
  agentSuspicious: boolean;
}

export interface Flag {
  code: string;
  message: string;
}

export interface AnomalyFactor {
  value: number;
  weight: number;
  risk: number;
  contribution: number;
}

export interface AnomalyResult {
  anomalyDetected: boolean;
  riskScore: number;
  severity: Severity;
  flags: Flag[];
  factors: { frequency: AnomalyFactor; largeValue: AnomalyFactor; failureRate: AnomalyFactor; flagged: AnomalyFactor };
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
/** 0 at ratio 1 (normal), 1 at `full`, linear between. */
const ramp = (ratio: number, full: number) => clamp01((ratio - 1) / (full - 1));

export function severityFor(riskScore: number): Severity {
  if (riskScore < 25) return 'LOW';
  if (riskScore < 50) return 'MEDIUM';
  if (riskScore < 75) return 'HIGH';
  return 'CRITICAL';
}

export function evaluateAnomaly(facts: AnomalyFacts, t: AnomalyThresholds): AnomalyResult {
  const flags: Flag[] = [];
  const hasHistory = facts.count30d > 0;
  if (!hasHistory)
    flags.push({ code: 'NO_HISTORY', message: 'no transactions in the last 30 days to compare against' });

  // Frequency: this hour (including the checked transaction) against the hourly average, taken
  // as at least one: an hour holds whole transactions, so against an average below one every
  // single payment of an agent that pays less than hourly would be a multiple of it (24× for one
  // a day), a burst that is no burst. Three in an hour are one (at the default 3×).
  const hourlyAverage = Math.max(1, facts.count30d / Math.max(1, facts.historyHours));
  const frequencyRatio = hasHistory ? (facts.lastHourCount + 1) / hourlyAverage : 0;
  const frequencyRisk = hasHistory ? ramp(frequencyRatio, t.frequencyFullRatio) : 0;
  if (hasHistory && frequencyRatio >= t.frequencyFlagRatio) {
    flags.push({
      code: 'HIGH_FREQUENCY',
      message: `${facts.lastHourCount + 1} transactions this hour, ${frequencyRatio.toFixed(1)}× the hourly average (${hourlyAverage.toFixed(2)}, at least one)`,
    });
  }

  // Large value: the amount against the agent's average amount in the same asset, exactly:
  // amount ÷ (volume ÷ count) = amount × count ÷ volume (bigint until the ratio; an average rounded
  // down first would overstate the ratio of small atomic amounts).
  const hasAverage = facts.assetCount30d > 0 && facts.volume30d > 0n;
  const valueRatio = hasAverage
    ? Number((facts.amount * BigInt(facts.assetCount30d) * 1000n) / facts.volume30d) / 1000
    : 0;
  const valueRisk = hasAverage ? ramp(valueRatio, t.valueFullRatio) : 0;
  if (hasAverage && valueRatio >= t.valueFlagRatio) {
    flags.push({ code: 'LARGE_VALUE', message: `amount is ${valueRatio.toFixed(1)}× the agent's average` });
  }

  // Failure rate over 30 days, once there is enough history to judge.
  const judged = facts.count30d >= t.failureMinHistory;
  const failureRate = facts.count30d > 0 ? facts.failed30d / facts.count30d : 0;
  const failureRisk = judged ? clamp01(failureRate / t.failureFullRate) : 0;
  if (judged && failureRate >= t.failureFlagRate) {
    flags.push({
      code: 'HIGH_FAILURE_RATE',
      message: `${Math.round(failureRate * 100)}% of the last 30 days' transactions failed`,
    });
  }

  // Flagged: sanctioned agent, owner or counterparty, or an agent whose last verification was
  // SUSPICIOUS. With no sanctions list nobody could be screened: that counts as a match (fails closed).
  if (facts.sanctionsListUnavailable)
    flags.push({
      code: 'SANCTIONS_LIST_UNAVAILABLE',
      message: 'no sanctions list is active: the agent and the counterparty could not be screened',
    });
  if (facts.agentSanctioned) flags.push({ code: 'SANCTIONED_AGENT', message: 'the agent is on the OFAC SDN list' });
  if (facts.ownerSanctioned)
    flags.push({ code: 'SANCTIONED_OWNER', message: 'the agent’s owner is on the OFAC SDN list' });
  if (facts.counterpartySanctioned)
    flags.push({ code: 'SANCTIONED_COUNTERPARTY', message: 'the counterparty is on the OFAC SDN list' });
  if (facts.agentSuspicious)
    flags.push({ code: 'SUSPICIOUS_AGENT', message: 'the agent’s latest verification was SUSPICIOUS' });
  const sanctionsHit =
    facts.agentSanctioned ||
    facts.ownerSanctioned === true ||
    facts.counterpartySanctioned ||
    facts.sanctionsListUnavailable === true;
  const flaggedRisk = sanctionsHit || facts.agentSuspicious ? 1 : 0;

  const factor = (value: number, weight: number, risk: number): AnomalyFactor => ({
    value: Math.round(value * 1000) / 1000,
    weight,
    risk: Math.round(risk * 1000) / 1000,
    contribution: roundHalfUp(risk * weight * 100),
  });
  const factors = {
    frequency: factor(frequencyRatio, anomalyWeights.frequency, frequencyRisk),
    largeValue: factor(valueRatio, anomalyWeights.largeValue, valueRisk),
    failureRate: factor(failureRate, anomalyWeights.failureRate, failureRisk),
    flagged: factor(flaggedRisk, anomalyWeights.flagged, flaggedRisk),
  };
  const riskScore = roundHalfUp(
    100 *
      (frequencyRisk * anomalyWeights.frequency +
        valueRisk * anomalyWeights.largeValue +
        failureRisk * anomalyWeights.failureRate +
        flaggedRisk * anomalyWeights.flagged),
  );
  // A sanctions match (or no list to screen against) is always an anomaly, and critical,
  // whatever the other factors say.
  return {
    anomalyDetected: sanctionsHit || riskScore >= t.detectAt,
    riskScore,
    severity: sanctionsHit ? 'CRITICAL' : severityFor(riskScore),
    flags,
    factors,
  };
}
