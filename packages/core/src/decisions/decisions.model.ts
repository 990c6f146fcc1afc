import type { DecisionReason } from '@vouch/schemas';
import type { RefusalReason } from '../budgets/budgets.model.ts';
import type { PolicyOutcome } from './policy.model.ts';

export type Verdict = 'allow' | 'deny' | 'review';
export type SanctionsState = 'clear' | 'listed' | 'unavailable';

/** Everything a decision weighs, already read. */
export interface DecisionEvidence {
  agent: { known: boolean; registered: boolean };
  sanctions: {
    /** No active list: nobody can be screened, so nobody passes. */
    listAvailable: boolean;
    agent: boolean;
    owner: boolean;
    counterparty: boolean;
  };
  /**
   * The budget check (null reason: within every limit). `limit`: the limit that refuses the amount
   * when the budget's sanctions screen refused first (its check weighs no limit then).
   */
  budget: { allowed: boolean; reason: RefusalReason | null; limit?: RefusalReason | null };
  policy: PolicyOutcome;
  /** An approval redeemed for this payment (it answers the policy's review), or why one could not be. */
  approval: { redeemed: true; id: string } | { redeemed: false; problem: string } | null;
}

const reason = (code: string, detail: string): DecisionReason => ({ code, detail });

/**
 * One answer at the moment of payment. Every finding is a reason; the decision is `deny` when any
 * reason denies, else `review` when one asks for review (unless an approval for exactly this
 * payment is redeemed), else `allow`. What denies, in the order reasons are listed:
 * - no sanctions list (SANCTIONS_LIST_UNAVAILABLE) — fail closed;
 * - the agent, its owner or the counterparty on the list (…_SANCTIONED);
 * - an unknown or unregistered agent (AGENT_UNKNOWN, AGENT_NOT_REGISTERED);
 * - the budget (NO_BUDGET, PER_TX_LIMIT, DAILY_LIMIT, MONTHLY_LIMIT, and its sanctions refusals
 *   SANCTIONS_LIST_UNAVAILABLE, SANCTIONED, COUNTERPARTY_SANCTIONED when the hold's statement
 *   finds what the screening did not);
 * - the policy: a matching deny rule (POLICY_DENY), or no rule matching (POLICY_NO_MATCH);
 * - an approval that cannot be redeemed (APPROVAL_INVALID).
 * A matching review rule gives POLICY_REVIEW; a matching allow rule POLICY_ALLOW; no policy NO_POLICY.
 */
export function decide(e: DecisionEvidence): { decision: Verdict; reasons: DecisionReason[] } {
  const denies: DecisionReason[] = [];
  const notes: DecisionReason[] = [];
  let review = false;

  if (!e.sanctions.listAvailable) {
    denies.push(reason('SANCTIONS_LIST_UNAVAILABLE', 'no sanctions list is active: nobody can be screened'));
  }
  if (e.sanctions.agent) denies.push(reason('AGENT_SANCTIONED', 'the agent is on the active sanctions list'));
  if (e.sanctions.owner) denies.push(reason('OWNER_SANCTIONED', "the agent's owner is on the active sanctions list"));
  if (e.sanctions.counterparty) {
    denies.push(reason('COUNTERPARTY_SANCTIONED', 'the counterparty is on the active sanctions list'));
  }
  if (!e.agent.known) denies.push(reason('AGENT_UNKNOWN', 'Vouch knows nothing of this agent'));
  else if (!e.agent.registered) denies.push(reason('AGENT_NOT_REGISTERED', 'the agent is observed, not registered'));

  // The budget's sanctions refusals usually repeat the sanctions reasons above; alone (the list
  // changed between the screening and the hold's statement), they are the only word of it and deny.
  const repeated: Partial<Record<RefusalReason, boolean>> = {
    SANCTIONS_LIST_UNAVAILABLE: !e.sanctions.listAvailable,
    SANCTIONED: e.sanctions.agent || e.sanctions.owner,
    COUNTERPARTY_SANCTIONED: e.sanctions.counterparty,
  };
  const details: Record<RefusalReason, string> = {
    SANCTIONS_LIST_UNAVAILABLE: 'no sanctions list is active: nobody can be screened (found by the budget)',
    SANCTIONED: 'the agent or its owner is on the active sanctions list (found by the budget)',
    COUNTERPARTY_SANCTIONED: 'the counterparty is on the active sanctions list (found by the budget)',
    NO_BUDGET: 'the organization has no budget for this agent (in this asset)',
    PER_TX_LIMIT: 'the amount exceeds the per-transaction limit',
    DAILY_LIMIT: 'the amount would exceed the daily limit (spent and held included)',
    MONTHLY_LIMIT: 'the amount would exceed the monthly limit (spent and held included)',
  };
  if (!e.budget.allowed && e.budget.reason !== null && repeated[e.budget.reason] !== true) {
    denies.push(reason(e.budget.reason, details[e.budget.reason]));
  }
  // A budget its screen refuses is still over a limit: that is a finding too.
  if (e.budget.limit) denies.push(reason(e.budget.limit, details[e.budget.limit]));

  switch (e.policy.kind) {
    case 'none':
      notes.push(reason('NO_POLICY', 'no policy applies to this agent'));
      break;
    case 'unmatched':
      denies.push(reason('POLICY_NO_MATCH', 'no rule of the policy matches: what a policy does not allow is refused'));
      break;
    case 'matched': {
      const { rule } = e.policy;
      if (rule.action === 'deny') denies.push(reason('POLICY_DENY', `rule "${rule.name}" denies`));
      else if (rule.action === 'review') {
        review = true;
        notes.push(reason('POLICY_REVIEW', `rule "${rule.name}" asks for a human review`));
      } else notes.push(reason('POLICY_ALLOW', `rule "${rule.name}" allows`));
    }
  }

  if (e.approval?.redeemed === true) {
    review = false;
    notes.push(reason('APPROVAL_REDEEMED', `approval ${e.approval.id} was granted for this payment`));
  } else if (e.approval?.redeemed === false) {
    denies.push(reason('APPROVAL_INVALID', e.approval.problem));
  }

  const decision: Verdict = denies.length ? 'deny' : review ? 'review' : 'allow';
  return { decision, reasons: [...denies, ...notes] };
}
