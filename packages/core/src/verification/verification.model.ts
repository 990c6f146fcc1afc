/** The 8 checks of a verification run and the status their count gives. */
import { checkKeys } from '@vouch/schemas';
import type { Grade } from '../agents/agents.model.ts';
import type { SanctionsSource } from '../sanctions/sanctions.service.ts';

export { checkKeys };
export type CheckKey = (typeof checkKeys)[number];

export type VerificationStatus = 'VERIFIED' | 'PARTIALLY_VERIFIED' | 'UNVERIFIED' | 'SUSPICIOUS';

export interface VerificationThresholds {
  /** accountAge: first known at least this many days ago. */
  minAgeDays: number;
  /** activityLevel: at least this many transactions in the activity window. */
  minTransactions: number;
  activityWindowDays: number;
  /** ownershipStability: no owner change within this many days. */
  ownerStableDays: number;
  /** minimumScore: score at least this. */
  minScore: number;
}

/** Checks passed → status: 8 VERIFIED, 5–7 PARTIALLY_VERIFIED, 2–4 UNVERIFIED, 0–1 SUSPICIOUS. */
export function statusFor(passed: number): VerificationStatus {
  if (passed >= 8) return 'VERIFIED';
  if (passed >= 5) return 'PARTIALLY_VERIFIED';
  if (passed >= 2) return 'UNVERIFIED';
  return 'SUSPICIOUS';
}

export type CheckState = 'passed' | 'failed' | 'not_run';

export interface CheckResult {
  passed: boolean;
  /** Set when the check could not run (no chain, a chain read that failed, no sanctions list): not a pass, not a failure. */
  notRun?: true;
  detail: string;
}

export function stateOf(result: CheckResult): CheckState {
  return result.notRun ? 'not_run' : result.passed ? 'passed' : 'failed';
}

/** A check that could not run. */
const notRun = (detail: string): CheckResult => ({ passed: false, notRun: true, detail });

/** Everything the checks look at, gathered beforehand (database, chain, sanctions list). */
export interface VerificationFacts {
  known: boolean;
  registered: boolean;
  firstSeenAt: Date | null;
  owner: string | null;
  ownerChangedAt: Date | null;
  score: number;
  recentTransactions: number;
  /** null when no chain is configured. */
  code: { ok: true; value: boolean } | { ok: false; reason: string; unreachable: boolean } | null;
  onChainOwner: { ok: true; value: string } | { ok: false; reason: string; unreachable: boolean } | null;
  addressSanctions: string[];
  ownerSanctions: string[];
  /** The active sanctions list; null when none is active (screening could not run: not a pass). */
  sanctionsList: SanctionsSource | null;
}

const DAY_MS = 86_400_000;
const NO_CHAIN = 'no chain configured (set CHAIN_RPC_URL)';

export function evaluateChecks(
  facts: VerificationFacts,
  t: VerificationThresholds,
  now: Date,
): Record<CheckKey, CheckResult> {
  const ageDays = facts.firstSeenAt ? (now.getTime() - facts.firstSeenAt.getTime()) / DAY_MS : 0;
  const sinceOwnerChange = facts.ownerChangedAt ? (now.getTime() - facts.ownerChangedAt.getTime()) / DAY_MS : null;
  const sanctioned = [...facts.addressSanctions, ...facts.ownerSanctions];

  const contractExists: CheckResult =
    facts.code === null
      ? notRun(NO_CHAIN)
      : !facts.code.ok
        ? notRun(`chain read failed: ${facts.code.reason}`)
        : facts.code.value
          ? { passed: true, detail: 'bytecode is deployed at the address' }
          : { passed: false, detail: 'no bytecode at the address (an externally owned account or nothing)' };

  let ownerConsistency: CheckResult;
  if (!facts.owner) ownerConsistency = { passed: false, detail: 'no owner registered for the agent' };
  else if (facts.onChainOwner === null) ownerConsistency = notRun(NO_CHAIN);
  else if (!facts.onChainOwner.ok)
    ownerConsistency = facts.onChainOwner.unreachable
      ? notRun(`owner() could not be read: ${facts.onChainOwner.reason}`)
      : { passed: false, detail: `owner() is not answered by the contract: ${facts.onChainOwner.reason}` };
  else if (facts.onChainOwner.value === facts.owner)
    ownerConsistency = { passed: true, detail: `on-chain owner() is the registered owner ${facts.owner}` };
  else
    ownerConsistency = {
      passed: false,
      detail: `on-chain owner() is ${facts.onChainOwner.value}, registered owner is ${facts.owner}`,
    };

  return {
    registration: facts.registered
      ? { passed: true, detail: 'the agent is registered' }
      : {
          passed: false,
          detail: facts.known ? 'the agent is observed but not registered' : 'the address is not known',
        },
    contractExists,
    accountAge: facts.firstSeenAt
      ? ageDays >= t.minAgeDays
        ? { passed: true, detail: `first known ${Math.floor(ageDays)} day(s) ago (minimum ${t.minAgeDays})` }
        : { passed: false, detail: `first known ${ageDays.toFixed(2)} day(s) ago; needs ${t.minAgeDays}` }
      : { passed: false, detail: 'the address is not known' },
    ownerConsistency,
    activityLevel:
      facts.recentTransactions >= t.minTransactions
        ? {
            passed: true,
            detail: `${facts.recentTransactions} transaction(s) in the last ${t.activityWindowDays} days`,
          }
        : {
            passed: false,
            detail: `${facts.recentTransactions} transaction(s) in the last ${t.activityWindowDays} days; needs ${t.minTransactions}`,
          },
    ownershipStability:
      sinceOwnerChange === null
        ? { passed: true, detail: 'no owner change recorded' }
        : sinceOwnerChange >= t.ownerStableDays
          ? { passed: true, detail: `owner last changed ${Math.floor(sinceOwnerChange)} day(s) ago` }
          : {
              passed: false,
              detail: `owner changed ${sinceOwnerChange.toFixed(2)} day(s) ago (within ${t.ownerStableDays})`,
            },
    sanctionsScreening: !facts.sanctionsList
      ? notRun('no sanctions list is active, so the address could not be screened (npm run sanctions:restore)')
      : sanctioned.length === 0
        ? {
            passed: true,
            detail: facts.owner
              ? 'neither the address nor its owner is on the sanctions list'
              : 'the address is not on the sanctions list',
          }
        : {
            passed: false,
            detail: [
              facts.addressSanctions.length
                ? `the address is on the OFAC SDN list (${facts.addressSanctions.join(', ')})`
                : '',
              facts.ownerSanctions.length
                ? `the owner is on the OFAC SDN list (${facts.ownerSanctions.join(', ')})`
                : '',
            ]
              .filter(Boolean)
              .join('; '),
          },
    minimumScore:
      facts.score >= t.minScore
        ? { passed: true, detail: `score ${facts.score} ≥ ${t.minScore}` }
        : { passed: false, detail: `score ${facts.score} < ${t.minScore}` },
  };
}

/** What a verification found, as answered and stored. */
export interface VerificationResult {
  address: string;
  status: VerificationStatus;
  grade: Grade;
  score: number;
  checks: Record<CheckKey, boolean>;
  checkDetails: Record<CheckKey, string>;
  /** passed, failed or not_run (could not be checked: counted neither as passed nor in `total`). */
  checkStates: Record<CheckKey, CheckState>;
  passed: number;
  /** The checks that ran. */
  total: number;
  notRun: number;
  /** The status and how many checks ran, in words. */
  statusDetail: string;
  sanctionsList: SanctionsSource | null;
  verifiedAt: number;
}

/** The status line of a verification: what passed of what ran, and what could not run. */
export function statusDetail(status: VerificationStatus, states: Record<CheckKey, CheckState>): string {
  const ran = checkKeys.filter((k) => states[k] !== 'not_run');
  const passed = ran.filter((k) => states[k] === 'passed').length;
  const skipped = checkKeys.filter((k) => states[k] === 'not_run');
  return `${status}: ${passed} of the ${ran.length} checks that ran passed${
    skipped.length ? `; not run: ${skipped.join(', ')}` : '; all 8 ran'
  }`;
}
