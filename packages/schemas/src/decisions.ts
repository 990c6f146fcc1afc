import { z } from 'zod';
import { metadataObject } from './agents.ts';
import { asset, authorization, MAX_HOLD_SECONDS } from './budgets.ts';
import {
  address,
  amount,
  gradeValue,
  pageLimit,
  positiveAmount,
  queryInteger,
  scoreValue,
  timeRangedQuery,
  unixSeconds,
} from './primitives.ts';

const weekday = z.enum(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']);
const clockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (00:00–23:59)');

/** An IANA time zone name the runtime knows (`Europe/Paris`, `UTC`); not an offset such as `+05:00`, which Intl also takes. */
const timeZone = z
  .string()
  .max(64)
  .refine(
    (zone) => {
      if (/^[+\-\u2212]/.test(zone)) return false;
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'is not a known IANA time zone' },
  );

const category = z.string().trim().min(1).max(64);
const ratio = z.number().min(0).max(1);
/** A trailing window: velocity and per-counterparty caps count what happened in the last `windowSeconds`. */
const windowSeconds = z
  .number()
  .int()
  .min(60)
  .max(366 * 86_400);

export const severities = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'] as const;

/**
 * What must hold for a rule to match: every condition given (none: always). Conditions on the
 * counterparty's score, grade or confidence match only when the counterparty is a known agent.
 */
export const policyCondition = z
  .strictObject({
    counterpartyIn: z.array(address).min(1).max(1000).optional(),
    counterpartyNotIn: z.array(address).min(1).max(1000).optional(),
    counterpartyKnown: z
      .boolean()
      .optional()
      .meta({ description: 'There is a counterparty, and it is (true) or is not (false) an agent Vouch knows' }),
    counterpartySanctioned: z.boolean().optional(),
    categoryIn: z.array(category).min(1).max(100).optional(),
    categoryNotIn: z.array(category).min(1).max(100).optional(),
    assetIn: z.array(asset).min(1).max(100).optional(),
    amountAbove: amount.optional().meta({ description: 'The amount is greater than this' }),
    amountAtMost: amount.optional(),
    timeWindow: z
      .strictObject({
        days: z.array(weekday).min(1).max(7).optional(),
        from: clockTime.optional().meta({
          description:
            'Inclusive; with `to` earlier than `from` the window spans midnight (equal: the 24 hours from `from`)',
        }),
        to: clockTime.optional().meta({ description: 'Exclusive' }),
        timeZone: timeZone.optional().meta({ description: 'IANA name; default UTC' }),
      })
      .optional()
      .meta({ description: 'Matches when the decision is made within these days and hours' }),
    velocity: z
      .strictObject({ max: z.number().int().min(1).max(1_000_000), windowSeconds })
      .optional()
      .meta({
        description:
          'Matches when the agent already made `max` or more accepted spends and holds in this organization in the window',
      }),
    counterpartyCap: z.strictObject({ amount, windowSeconds }).optional().meta({
      description:
        'Matches when what was spent and is held to this counterparty in the window, plus this amount, exceeds `amount`',
    }),
    agentScoreBelow: scoreValue.optional(),
    agentScoreAtLeast: scoreValue.optional(),
    agentGradeBelow: gradeValue.optional(),
    agentGradeAtLeast: gradeValue.optional(),
    agentConfidenceBelow: ratio.optional(),
    agentConfidenceAtLeast: ratio.optional(),
    counterpartyScoreBelow: scoreValue.optional(),
    counterpartyScoreAtLeast: scoreValue.optional(),
    counterpartyGradeBelow: gradeValue.optional(),
    counterpartyGradeAtLeast: gradeValue.optional(),
    counterpartyConfidenceBelow: ratio.optional(),
    counterpartyConfidenceAtLeast: ratio.optional(),
    anomalyRiskAtLeast: z
      .enum(severities)
      .optional()
      .meta({ description: 'The anomaly model rates this payment at least this severe for the agent' }),
  })
  .meta({ id: 'PolicyCondition' });
export type PolicyCondition = z.infer<typeof policyCondition>;

export const policyRule = z
  .strictObject({
    name: z.string().trim().min(1).max(64),
    action: z.enum(['allow', 'deny', 'review']),
    when: policyCondition.default({}),
  })
  .meta({ id: 'PolicyRule' });
export type PolicyRule = z.infer<typeof policyRule>;

export const policyBody = z
  .strictObject({
    rules: z
      .array(policyRule)
      .min(1)
      .max(100)
      .refine((rules) => new Set(rules.map((r) => r.name)).size === rules.length, {
        message: 'rule names must be unique',
      }),
    expectedVersion: z.number().int().min(0).optional().meta({
      description:
        'Write only if the policy’s latest version (a deletion included) is this one, 0 if it never had one: 409 POLICY_VERSION_CONFLICT otherwise, so an edit made from a stale read does not replace a newer one',
    }),
  })
  .meta({ id: 'PolicyBody' });
export type PolicyInput = z.infer<typeof policyBody>;

export const policy = z
  .object({
    agent: z.string().nullable().meta({ description: 'null: the organization’s default policy' }),
    version: z.number().int(),
    rules: z.array(policyRule).nullable().meta({ description: 'null: deleted in this version' }),
    createdAt: unixSeconds,
    actorKeyId: z.string().nullable(),
  })
  .meta({ id: 'Policy' });
export type Policy = z.infer<typeof policy>;

export const policyVersions = z.object({ versions: z.array(policy), nextCursor: z.string().nullable() });
/** A page of versions: a policy may be up to the body limit, so a page is kept to a few. */
export const policyVersionsQuery = z.strictObject({ limit: pageLimit(50, 20), cursor: z.string().max(512).optional() });
/** Versions are stored as PostgreSQL `integer`s: none is above 2^31 − 1. */
export const policyQuery = z.strictObject({ version: queryInteger(1, 2_147_483_647).optional() });

export const decisionBody = z
  .strictObject({
    agent: address,
    amount: positiveAmount,
    asset: asset.optional(),
    counterparty: address.optional(),
    category: category.optional(),
    context: metadataObject.optional().meta({ description: 'Anything the caller wants stored with the decision' }),
    hold: z
      .boolean()
      .optional()
      .meta({ description: 'With an allow, also hold the amount (an authorization) in the same transaction' }),
    expiresIn: z.number().int().min(1).max(MAX_HOLD_SECONDS).optional().meta({ description: 'Of the hold, seconds' }),
    approvalId: z
      .string()
      .regex(/^[1-9]\d{0,17}$/)
      .optional()
      .meta({
        description: 'Redeem an approved review: one time, same agent, counterparty, amount, asset and category',
      }),
  })
  .meta({ id: 'DecisionRequest' });
export type DecisionInput = z.infer<typeof decisionBody>;

export const decisionReason = z.object({ code: z.string(), detail: z.string() }).meta({ id: 'DecisionReason' });
export type DecisionReason = z.infer<typeof decisionReason>;

const sanctionsState = z.enum(['clear', 'listed', 'unavailable']);

export const decision = z
  .object({
    decisionId: z.string(),
    decision: z.enum(['allow', 'deny', 'review']),
    reasons: z.array(decisionReason),
    agent: z.string(),
    amount: z.string(),
    asset: z.string(),
    counterparty: z.string().nullable(),
    category: z.string().nullable(),
    score: scoreValue.nullable(),
    grade: gradeValue.nullable(),
    confidence: ratio.nullable(),
    sanctions: z.object({
      agent: sanctionsState,
      counterparty: sanctionsState.nullable(),
      list: z
        .object({
          name: z.string(),
          snapshotDate: z.string(),
          entries: z.number().int(),
          contentHash: z.string().nullable(),
        })
        .nullable(),
    }),
    budget: z
      .object({
        allowed: z.boolean(),
        reason: z.string().nullable(),
        dailyRemaining: z.string(),
        monthlyRemaining: z.string(),
        perTxLimit: z.string().nullable(),
      })
      .nullable(),
    policy: z.object({
      agent: z.string().nullable().meta({ description: 'Whose policy applied: the agent’s, or null for the default' }),
      version: z.number().int().nullable(),
      matchedRule: z.string().nullable(),
    }),
    modelVersion: z.string(),
    authorization: authorization.nullable(),
    approvalId: z
      .string()
      .nullable()
      .meta({
        description:
          'The approval a review asks for, or the one this decision redeemed; else null (when only an approvalId ' +
          'that cannot be redeemed stood in the way, the APPROVAL_INVALID reason says why)',
      }),
    createdAt: unixSeconds,
  })
  .meta({ id: 'Decision' });
export type Decision = z.infer<typeof decision>;

export const decisionList = z.object({ decisions: z.array(decision), nextCursor: z.string().nullable() });
export const listDecisionsQuery = timeRangedQuery({
  limit: pageLimit(100, 50),
  cursor: z.string().max(512).optional(),
  decision: z.enum(['allow', 'deny', 'review']).optional(),
});
export type ListDecisionsQuery = z.infer<typeof listDecisionsQuery>;

export const decisionParams = z.object({
  id: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a decision id (a UUID)'),
});

export const approvalStatus = z.enum(['pending', 'approved', 'denied', 'expired', 'redeemed']);

export const approval = z
  .object({
    approvalId: z.string(),
    status: approvalStatus,
    decisionId: z.string(),
    agent: z.string(),
    amount: z.string(),
    asset: z.string(),
    counterparty: z.string().nullable(),
    category: z.string().nullable(),
    authorizationId: z.string().nullable().meta({ description: 'The hold reserved while the approval is pending' }),
    requestedByKeyId: z.string().nullable(),
    decidedByKeyId: z.string().nullable(),
    note: z.string().nullable(),
    expiresAt: unixSeconds.meta({ description: 'Pending: when it expires; approved: until when it may be redeemed' }),
    decidedAt: unixSeconds.nullable(),
    redeemedAt: unixSeconds.nullable(),
    createdAt: unixSeconds,
  })
  .meta({ id: 'Approval' });
export type Approval = z.infer<typeof approval>;

export const approvalParams = z.object({ id: z.string().regex(/^[1-9]\d{0,17}$/, 'must be an approval id') });
export const approvalList = z.object({ approvals: z.array(approval), nextCursor: z.string().nullable() });
export const approvalsQuery = z.strictObject({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
  status: approvalStatus.optional(),
  agent: address.optional(),
});
export const approveBody = z.strictObject({
  note: z.string().trim().min(1).max(500).optional(),
  expiresIn: z
    .number()
    .int()
    .min(60)
    .max(MAX_HOLD_SECONDS)
    .optional()
    .meta({ description: 'How long the grant may be redeemed (default 3600 s)' }),
});
export const denyApprovalBody = z.strictObject({ note: z.string().trim().min(1).max(500).optional() });
