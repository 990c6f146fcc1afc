import type { PolicyCondition, PolicyRule } from '@vouch/schemas';
import { type Grade, gradeRange } from '../agents/agents.model.ts';

/** What a rule may look at. Windowed figures and the anomaly severity are read only when a rule asks. */
export interface PolicyFacts {
  amount: bigint;
  asset: string;
  counterparty: string | null;
  category: string | null;
  now: Date;
  agent: { score: number; grade: Grade; confidence: number };
  /** The counterparty as an agent Vouch knows; null when it is not one (or there is none). */
  counterpartyAgent: { score: number; grade: Grade; confidence: number } | null;
  counterpartySanctioned: boolean;
  /** Accepted spends and holds of the agent in this organization within the last `windowSeconds`. */
  velocity(windowSeconds: number): Promise<number>;
  /** Spent and held to the counterparty in this organization within the last `windowSeconds`. */
  toCounterparty(windowSeconds: number): Promise<bigint>;
  anomalySeverity(): Promise<'LOW' | 'MEDIUM' | 'HIGH' | 'CRITICAL'>;
}

const SEVERITY_ORDER = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'] as const;
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/** A grade's rank (D 0 … AAA 9), so grades compare like the scores they stand for. */
const gradeRank = (grade: Grade) => gradeRange(grade).min;

/** Weekday and minutes since midnight of `now` in `timeZone` (an IANA name the schema checked). */
export function localTime(now: Date, timeZone: string): { day: (typeof WEEKDAYS)[number]; minutes: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(now);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  const day = part('weekday').toLowerCase().slice(0, 3) as (typeof WEEKDAYS)[number];
  return { day, minutes: Number(part('hour')) * 60 + Number(part('minute')) };
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether `now` falls in the window: its days, and from (inclusive) to (exclusive), across
 * midnight when to < from; to = from is the 24 hours from `from`.
 */
export function inTimeWindow(window: NonNullable<PolicyCondition['timeWindow']>, now: Date): boolean {
  const local = localTime(now, window.timeZone ?? 'UTC');
  const from = window.from === undefined ? 0 : minutesOf(window.from);
  const to = window.to === undefined ? 24 * 60 : minutesOf(window.to);
  const overnight = to <= from;
  // An overnight window's early hours belong to the day it started on.
  const startedYesterday = overnight && local.minutes < to;
  const dayIndex = WEEKDAYS.indexOf(local.day);
  const startDay = startedYesterday ? WEEKDAYS[(dayIndex + 6) % 7] : local.day;
  if (window.days && !window.days.includes(startDay as (typeof window.days)[number])) return false;
  return overnight ? local.minutes >= from || local.minutes < to : local.minutes >= from && local.minutes < to;
}

/** Whether every condition of `when` holds (an empty one always does). */
export async function matches(when: PolicyCondition, facts: PolicyFacts): Promise<boolean> {
  const cp = facts.counterparty;
  const cpAgent = facts.counterpartyAgent;
  const checks: Array<() => boolean | Promise<boolean>> = [];
  const add = (present: unknown, check: () => boolean | Promise<boolean>) => {
    if (present !== undefined) checks.push(check);
  };
  add(when.counterpartyIn, () => cp !== null && (when.counterpartyIn ?? []).includes(cp));
  add(when.counterpartyNotIn, () => cp === null || !(when.counterpartyNotIn ?? []).includes(cp));
  // About a counterparty: without one, neither known nor unknown.
  add(when.counterpartyKnown, () => cp !== null && (cpAgent !== null) === when.counterpartyKnown);
  add(when.counterpartySanctioned, () => facts.counterpartySanctioned === when.counterpartySanctioned);
  add(when.categoryIn, () => facts.category !== null && (when.categoryIn ?? []).includes(facts.category));
  add(when.categoryNotIn, () => facts.category === null || !(when.categoryNotIn ?? []).includes(facts.category));
  add(when.assetIn, () => (when.assetIn ?? []).includes(facts.asset));
  add(when.amountAbove, () => facts.amount > BigInt(when.amountAbove as string));
  add(when.amountAtMost, () => facts.amount <= BigInt(when.amountAtMost as string));
  add(when.timeWindow, () => inTimeWindow(when.timeWindow as NonNullable<PolicyCondition['timeWindow']>, facts.now));
  add(when.agentScoreBelow, () => facts.agent.score < (when.agentScoreBelow as number));
  add(when.agentScoreAtLeast, () => facts.agent.score >= (when.agentScoreAtLeast as number));
  add(when.agentGradeBelow, () => gradeRank(facts.agent.grade) < gradeRank(when.agentGradeBelow as Grade));
  add(when.agentGradeAtLeast, () => gradeRank(facts.agent.grade) >= gradeRank(when.agentGradeAtLeast as Grade));
  add(when.agentConfidenceBelow, () => facts.agent.confidence < (when.agentConfidenceBelow as number));
  add(when.agentConfidenceAtLeast, () => facts.agent.confidence >= (when.agentConfidenceAtLeast as number));
  // Counterparty standing: only a known agent has one.
  add(when.counterpartyScoreBelow, () => cpAgent !== null && cpAgent.score < (when.counterpartyScoreBelow as number));
  add(
    when.counterpartyScoreAtLeast,
    () => cpAgent !== null && cpAgent.score >= (when.counterpartyScoreAtLeast as number),
  );
  add(
    when.counterpartyGradeBelow,
    () => cpAgent !== null && gradeRank(cpAgent.grade) < gradeRank(when.counterpartyGradeBelow as Grade),
  );
  add(
    when.counterpartyGradeAtLeast,
    () => cpAgent !== null && gradeRank(cpAgent.grade) >= gradeRank(when.counterpartyGradeAtLeast as Grade),
  );
  add(
    when.counterpartyConfidenceBelow,
    () => cpAgent !== null && cpAgent.confidence < (when.counterpartyConfidenceBelow as number),
  );
  add(
    when.counterpartyConfidenceAtLeast,
    () => cpAgent !== null && cpAgent.confidence >= (when.counterpartyConfidenceAtLeast as number),
  );
  // Conditions that read the database come last, whatever their place in `when`.
  add(when.counterpartyCap, async () => {
    const c = when.counterpartyCap as { amount: string; windowSeconds: number };
    if (cp === null) return false;
    return (await facts.toCounterparty(c.windowSeconds)) + facts.amount > BigInt(c.amount);
  });
  add(when.velocity, async () => {
    const v = when.velocity as { max: number; windowSeconds: number };
    return (await facts.velocity(v.windowSeconds)) >= v.max;
  });
  add(when.anomalyRiskAtLeast, async () => {
    const severity = await facts.anomalySeverity();
    return SEVERITY_ORDER.indexOf(severity) >= SEVERITY_ORDER.indexOf(when.anomalyRiskAtLeast as 'LOW');
  });
  // The first false condition ends the rule, before any read a later one would make.
  for (const check of checks) if (!(await check())) return false;
  return true;
}

/**
 * Whether a rule set counts the agent's own payments (`velocity`, `counterpartyCap`): a decision
 * that holds money under it must count and hold with no other such decision in between.
 */
export function countsPayments(rules: readonly PolicyRule[] | null | undefined): boolean {
  return (rules ?? []).some((r) => r.when.velocity !== undefined || r.when.counterpartyCap !== undefined);
}

export type PolicyOutcome = { kind: 'none' } | { kind: 'matched'; rule: PolicyRule } | { kind: 'unmatched' };

/**
 * First match wins: the first rule whose conditions all hold decides (allow, deny or review). A
 * rule set that no rule matches denies: once a policy exists, what it does not allow is refused.
 * No rule set: nothing to apply.
 */
export async function evaluatePolicy(rules: readonly PolicyRule[] | null, facts: PolicyFacts): Promise<PolicyOutcome> {
  if (!rules) return { kind: 'none' };
  for (const rule of rules) if (await matches(rule.when, facts)) return { kind: 'matched', rule };
  return { kind: 'unmatched' };
}
