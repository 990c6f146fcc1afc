import { z } from 'zod';
import { asset } from './budgets.ts';
import { address, gradeValue, positiveAmount, txHash, unixSeconds } from './primitives.ts';
import { transactionTypes } from './transactions.ts';

export const addressBody = z.strictObject({ address });
export const agentBody = z.strictObject({ agent: address });
export const ownerBody = z.strictObject({ owner: address });

/** The 8 checks of a verification run, in order. */
export const checkKeys = [
  'registration',
  'contractExists',
  'accountAge',
  'ownerConsistency',
  'activityLevel',
  'ownershipStability',
  'sanctionsScreening',
  'minimumScore',
] as const;
const checkKey = z.enum(checkKeys);

export const sanctionsSource = z
  .object({
    name: z.string(),
    snapshotDate: z.string(),
    entries: z.number().int(),
    contentHash: z
      .string()
      .nullable()
      .meta({ description: 'SHA-256 of the list: one `address:list,list` line per address, in address order' }),
  })
  .meta({ id: 'SanctionsList' });

export const verificationResult = z
  .object({
    address: z.string(),
    status: z.enum(['VERIFIED', 'PARTIALLY_VERIFIED', 'UNVERIFIED', 'SUSPICIOUS']),
    grade: gradeValue,
    score: z.number().int(),
    checks: z.record(checkKey, z.boolean()),
    checkDetails: z.record(checkKey, z.string()),
    checkStates: z.record(checkKey, z.enum(['passed', 'failed', 'not_run'])).meta({
      description: 'not_run: the check could not be made (no chain configured, a chain read failed, no sanctions list)',
    }),
    passed: z.number().int(),
    total: z.number().int().meta({ description: 'The checks that ran (8 less those not run)' }),
    notRun: z.number().int(),
    statusDetail: z.string().meta({
      example: 'PARTIALLY_VERIFIED: 6 of the 6 checks that ran passed; not run: contractExists, ownerConsistency',
    }),
    sanctionsList: sanctionsSource.nullable().meta({
      description: 'The sanctions list the address and its owner were screened against; null when none was active',
    }),
    verifiedAt: unixSeconds,
  })
  .meta({ id: 'Verification' });

export const verificationList = z.object({ verifications: z.array(verificationResult) });

export const screeningResult = z
  .object({
    address: z.string(),
    state: z.enum(['listed', 'clear', 'list_unavailable']).meta({
      description: 'list_unavailable: no sanctions list is active, so the address could not be screened (not a pass)',
    }),
    sanctioned: z.boolean(),
    matchedLists: z.array(z.string()),
    source: sanctionsSource.nullable(),
    checkedAt: unixSeconds,
  })
  .meta({ id: 'SanctionsScreening' });

const typeNumber = z.number().int().min(0).max(5);
const typeName = z.enum(transactionTypes);

/** The transaction to check; its type may be given as `type` or `txType` (number or name). */
export const anomalyBody = z
  .strictObject({
    agent: address,
    txHash: txHash.optional(),
    amount: positiveAmount,
    asset: asset.optional(),
    type: z.union([typeNumber, typeName]).optional(),
    txType: z.union([typeNumber, typeName]).optional(),
    counterparty: address.optional(),
  })
  .refine((b) => b.type !== undefined || b.txType !== undefined, {
    message: 'type (or txType) is required',
    path: ['type'],
  })
  .transform((b, ctx) => {
    const toNumber = (v: number | string | undefined) =>
      typeof v === 'string' ? transactionTypes.indexOf(v as never) : v;
    const type = toNumber(b.type);
    const txType = toNumber(b.txType);
    if (type !== undefined && txType !== undefined && type !== txType) {
      ctx.addIssue({ code: 'custom', message: 'type and txType disagree', path: ['txType'] });
      return z.NEVER;
    }
    return {
      agent: b.agent,
      txHash: b.txHash,
      amount: b.amount,
      asset: b.asset,
      type: (type ?? txType) as number,
      counterparty: b.counterparty,
    };
  });

const anomalyFactor = z.object({
  value: z.number(),
  weight: z.number(),
  risk: z.number(),
  contribution: z.number().int(),
});

export const anomalyResult = z
  .object({
    agent: z.string(),
    anomalyDetected: z.boolean(),
    riskScore: z.number().int().min(0).max(100),
    severity: z.enum(['LOW', 'MEDIUM', 'HIGH', 'CRITICAL']),
    flags: z.array(z.object({ code: z.string(), message: z.string() })),
    factors: z.object({
      frequency: anomalyFactor,
      largeValue: anomalyFactor,
      failureRate: anomalyFactor,
      flagged: anomalyFactor,
    }),
    checkedAt: unixSeconds,
  })
  .meta({ id: 'AnomalyCheck' });

export const enrichResult = z
  .object({
    agent: z.string(),
    sanctionsClean: z.boolean(),
    apiReputationScore: z.number().int().min(0).max(100),
    riskLevel: z.enum(['LOW', 'MEDIUM', 'HIGH', 'CRITICAL']),
    riskReason: z.string(),
    lastChecked: unixSeconds,
    sources: z.object({
      score: z.number().int(),
      known: z.boolean(),
      sanctions: sanctionsSource.nullable(),
      latestVerification: z.object({ status: z.string(), at: unixSeconds }).nullable(),
      latestAnomaly: z.object({ severity: z.string(), riskScore: z.number().int(), at: unixSeconds }).nullable(),
    }),
  })
  .meta({ id: 'Enrichment' });
