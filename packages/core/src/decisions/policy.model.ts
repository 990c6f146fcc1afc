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

type Standing = PolicyFacts['agent'];

/** Bounds on a standing, each absent or a figure the standing must be below / at least. */
interface StandingBounds {
  scoreBelow: number | undefined;
  scoreAtLeast: number | undefined;
  gradeBelow: Grade | undefined;
  gradeAtLeast: Grade | undefined;
  confidenceBelow: number | undefined;
  confidenceAtLeast: number | undefined;
}

/** Whether `s` meets every bound given; no standing (not a known agent) meets none. */
function within(s: Standing | null, b: StandingBounds): boolean {
  if (b.scoreBelow !== undefined && !(s !== null && s.score < b.scoreBelow)) return false;
  if (b.scoreAtLeast !== undefined && !(s !== null && s.score >= b.scoreAtLeast)) return false;
  if (b.gradeBelow !== undefined && !(s !== null && gradeRank(s.grade) < gradeRank(b.gradeBelow))) return false;
  if (b.gradeAtLeast !== undefined && !(s !== null && gradeRank(s.grade) >= gradeRank(b.gradeAtLeast))) return false;
  if (b.confidenceBelow !== undefined && !(s !== null && s.confidence < b.confidenceBelow)) return false;
  if (b.confidenceAtLeast !== undefined && !(s !== null && s.confidence >= b.confidenceAtLeast)) return false;
  return true;
}

/** Whether every condition of `when` that needs no read holds (absent ones do). */
function holdsNow(when: PolicyCondition, facts: PolicyFacts): boolean {
  const cp = facts.counterparty;
  if (when.counterpartyIn !== undefined && (cp === null || !when.counterpartyIn.includes(cp))) return false;
  if (when.counterpartyNotIn !== undefined && cp !== null && when.counterpartyNotIn.includes(cp)) return false;
  // About a counterparty: without one, neither known nor unknown.
  if (
    when.counterpartyKnown !== undefined &&
    (cp === null || (facts.counterpartyAgent !== null) !== when.counterpartyKnown)
  ) {
    return false;
  }
  if (when.counterpartySanctioned !== undefined && facts.counterpartySanctioned !== when.counterpartySanctioned) {
    return false;
  }
  if (when.categoryIn !== undefined && (facts.category === null || !when.categoryIn.includes(facts.category))) {
    return false;
  }
  if (when.categoryNotIn !== undefined && facts.category !== null && when.categoryNotIn.includes(facts.category)) {
    return false;
  }
  if (when.assetIn !== undefined && !when.assetIn.includes(facts.asset)) return false;
  if (when.amountAbove !== undefined && !(facts.amount > BigInt(when.amountAbove))) return false;
  if (when.amountAtMost !== undefined && !(facts.amount <= BigInt(when.amountAtMost))) return false;
  if (when.timeWindow !== undefined && !inTimeWindow(when.timeWindow, facts.now)) return false;
  return (
    within(facts.agent, {
      scoreBelow: when.agentScoreBelow,
      scoreAtLeast: when.agentScoreAtLeast,
      gradeBelow: when.agentGradeBelow,
      gradeAtLeast: when.agentGradeAtLeast,
      confidenceBelow: when.agentConfidenceBelow,
      confidenceAtLeast: when.agentConfidenceAtLeast,
    }) &&
    // Counterparty standing: only a known agent has one.
    within(facts.counterpartyAgent, {
      scoreBelow: when.counterpartyScoreBelow,
      scoreAtLeast: when.counterpartyScoreAtLeast,
      gradeBelow: when.counterpartyGradeBelow,
      gradeAtLeast: when.counterpartyGradeAtLeast,
      confidenceBelow: when.counterpartyConfidenceBelow,
      confidenceAtLeast: when.counterpartyConfidenceAtLeast,
    })
  );
}

/** Whether the conditions of `when` that read the database hold, in a fixed order, the first false one ending it. */
async function holdsOnRead(when: PolicyCondition, facts: PolicyFacts): Promise<boolean> {
  const cap = when.counterpartyCap;
  if (cap !== undefined) {
    if (facts.counterparty === null) return false;
    if (!((await facts.toCounterparty(cap.windowSeconds)) + facts.amount > BigInt(cap.amount))) return false;
  }
  const velocity = when.velocity;
  if (velocity !== undefined && !((await facts.velocity(velocity.windowSeconds)) >= velocity.max)) return false;
  const risk = when.anomalyRiskAtLeast;
  if (risk !== undefined) {
    const severity = await facts.anomalySeverity();
    if (SEVERITY_ORDER.indexOf(severity) < SEVERITY_ORDER.indexOf(risk)) return false;
  }
  return true;
}

/**
 * Whether every condition of `when` holds (an empty one always does). The conditions that read the
 * database come last, whatever their place in `when`: the first false condition ends the rule,
 * before any read a later one would make. A rule with no such condition is answered at once.
 */
export function matches(when: PolicyCondition, facts: PolicyFacts): boolean | Promise<boolean> {
  if (!holdsNow(when, facts)) return false;
  const reads =
    when.counterpartyCap !== undefined || when.velocity !== undefined || when.anomalyRiskAtLeast !== undefined;
  return reads ? holdsOnRead(when, facts) : true;
}

export type PolicyOutcome = { kind: 'none' } | { kind: 'matched'; rule: PolicyRule } | { kind: 'unmatched' };

/**
 * First match wins: the first rule whose conditions all hold decides (allow, deny or review). A
 * rule set that no rule matches denies: once a policy exists, what it does not allow is refused.
 * No rule set: nothing to apply.
 */
export async function evaluatePolicy(rules: readonly PolicyRule[] | null, facts: PolicyFacts): Promise<PolicyOutcome> {
  if (!rules) return { kind: 'none' };
  for (const rule of rules) {
    const matched = matches(rule.when, facts);
    if (matched === true || (matched !== false && (await matched))) return { kind: 'matched', rule };
  }
  return { kind: 'unmatched' };
}
