import { z } from 'zod';
import { metadataObject } from './agents.ts';
import { address, amount, pageLimit, positiveAmount, timeRangedQuery, unixSeconds } from './primitives.ts';

/** CAIP-19: `<namespace>:<chain>/<asset namespace>:<asset reference>[/<token id>]`. */
const CAIP19 = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}\/[-a-z0-9]{3,8}:[-.%a-zA-Z0-9]{1,128}(\/[-.%a-zA-Z0-9]{1,78})?$/;

/**
 * Which asset a budget counts, as a CAIP-19 id (`eip155:8453/erc20:0x8335…` for USDC on Base), its
 * amounts in that asset's atomic units; absent or '' → the default budget (wei). EVM (`eip155`)
 * ids are compared in lowercase.
 */
export const asset = z
  .string()
  .max(200)
  // A regex, so that the OpenAPI document states the format as the `pattern`.
  .regex(
    new RegExp(`^$|${CAIP19.source}`),
    'must be a CAIP-19 asset id such as eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  )
  .transform((value) => (value.startsWith('eip155:') ? value.toLowerCase() : value))
  .meta({
    description: 'CAIP-19 asset id; absent or empty: the default budget, in wei',
    example: 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  });

export const assetQuery = z.strictObject({ asset: asset.optional() });

export const setBudgetBody = z
  .strictObject({
    asset: asset.optional(),
    dailyLimit: amount.optional(),
    monthlyLimit: amount.optional(),
    perTxLimit: amount.optional(),
  })
  .refine((b) => b.dailyLimit !== undefined || b.monthlyLimit !== undefined || b.perTxLimit !== undefined, {
    message: 'at least one of dailyLimit, monthlyLimit, perTxLimit is required',
  });
export type SetBudgetInput = z.infer<typeof setBudgetBody>;

export const amountBody = z.strictObject({
  amount: positiveAmount,
  asset: asset.optional(),
  counterparty: address
    .optional()
    .meta({ description: 'Who is paid (kept in the ledger; per-counterparty caps read it)' }),
});
export type AmountInput = z.infer<typeof amountBody>;

export const budget = z
  .object({
    asset: z.string().meta({ description: "'' for the default budget (wei)" }),
    dailyLimit: z.string(),
    dailySpent: z.string(),
    monthlyLimit: z.string(),
    monthlySpent: z.string(),
    perTxLimit: z.string(),
    dailyHeld: z.string().meta({ description: 'Reserved by holds made today (UTC)' }),
    monthlyHeld: z.string().meta({ description: 'Reserved by holds made this month (UTC)' }),
    dailyRemaining: z.string().meta({ description: 'dailyLimit − dailySpent − dailyHeld (at least 0)' }),
    monthlyRemaining: z.string().meta({ description: 'monthlyLimit − monthlySpent − monthlyHeld (at least 0)' }),
    dailyResetsAt: unixSeconds,
    monthlyResetsAt: unixSeconds,
    updatedAt: unixSeconds,
  })
  .meta({ id: 'Budget' });
export type Budget = z.infer<typeof budget>;

export const refusalReason = z
  .enum([
    'SANCTIONS_LIST_UNAVAILABLE',
    'SANCTIONED',
    'COUNTERPARTY_SANCTIONED',
    'PER_TX_LIMIT',
    'DAILY_LIMIT',
    'MONTHLY_LIMIT',
    'NO_BUDGET',
  ])
  .meta({
    description:
      'The first that holds, in this order. NO_BUDGET (a check): the organization has no budget for the agent; ' +
      'SANCTIONS_LIST_UNAVAILABLE: no sanctions list is active, so nobody can be screened; SANCTIONED: the agent ' +
      'or its owner is on the active list; COUNTERPARTY_SANCTIONED: the counterparty named (by a capture: its ' +
      "hold's) is; then the limits",
  });
export type RefusalReason = z.infer<typeof refusalReason>;

export const budgetCheck = z
  .object({
    allowed: z.boolean(),
    amount: z.string(),
    dailyRemaining: z.string(),
    monthlyRemaining: z.string(),
    perTxLimit: z.string().nullable(),
    reason: refusalReason.nullable(),
    dailyResetsAt: unixSeconds,
    monthlyResetsAt: unixSeconds,
  })
  .meta({ id: 'BudgetCheck' });
export type BudgetCheck = z.infer<typeof budgetCheck>;

export const spendResult = budgetCheck
  .extend({
    spendId: z.string(),
    dailySpent: z.string(),
    monthlySpent: z.string(),
  })
  .meta({ id: 'SpendResult' });
export type SpendResult = z.infer<typeof spendResult>;

export const authorizationStatus = z.enum(['pending_approval', 'held', 'captured', 'voided', 'expired']).meta({
  description:
    'held: reserved, may be captured or voided until it expires; pending_approval: reserved while an approval is pending; ' +
    'captured, voided, expired: released',
});

/** The longest a hold may last: 30 days. */
export const MAX_HOLD_SECONDS = 30 * 86_400;

export const authorizeBody = z.strictObject({
  amount: positiveAmount,
  asset: asset.optional(),
  counterparty: address.optional(),
  expiresIn: z
    .number()
    .int()
    .min(1)
    .max(MAX_HOLD_SECONDS)
    .optional()
    .meta({ description: 'Seconds until the hold expires and is released (default 3600, at most 30 days)' }),
  metadata: metadataObject.optional(),
});
export type AuthorizeInput = z.infer<typeof authorizeBody>;

export const authorizationParams = z.object({
  address,
  id: z.string().regex(/^[1-9]\d{0,17}$/, 'must be an authorization id'),
});

export const authorization = z
  .object({
    authorizationId: z.string(),
    agent: z.string(),
    asset: z.string(),
    amount: z.string().meta({ description: 'What the hold reserves' }),
    captured: z.string().meta({ description: 'What was captured (0 until then, and for a void or expiry)' }),
    status: authorizationStatus,
    counterparty: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    expiresAt: unixSeconds,
    createdAt: unixSeconds,
    capturedAt: unixSeconds.nullable(),
    releasedAt: unixSeconds.nullable(),
    decisionId: z.string().nullable(),
  })
  .meta({ id: 'Authorization' });
export type Authorization = z.infer<typeof authorization>;

export const authorizationResult = authorization
  .extend({
    dailyRemaining: z.string(),
    monthlyRemaining: z.string(),
  })
  .meta({ id: 'AuthorizationResult' });
export type AuthorizationResult = z.infer<typeof authorizationResult>;

export const captureBody = z.strictObject({
  amount: positiveAmount
    .optional()
    .meta({ description: 'At most what is held; absent → all of it. The rest is released.' }),
  settled: z
    .boolean()
    .optional()
    .meta({
      description:
        'true: the payment has already moved (an x402 settlement, a card network that settled): the capture records ' +
        'it even when the sanctions screen would now refuse it, and `screening` says what the screen found. ' +
        'Absent or false: the screen refuses the capture (422 BUDGET_EXCEEDED), as it refuses a spend.',
    }),
});

/** What the sanctions screen finds for a payment: the reason it refuses it, or null. */
export const paymentScreening = refusalReason
  .extract(['SANCTIONS_LIST_UNAVAILABLE', 'SANCTIONED', 'COUNTERPARTY_SANCTIONED'])
  .nullable();
/** A reason the sanctions screen refuses a payment for. */
export type ScreeningRefusal = NonNullable<z.infer<typeof paymentScreening>>;

export const authorizationState = authorization
  .extend({
    screening: paymentScreening.meta({
      description:
        'What the sanctions screen would find if the hold were captured now (the agent, its owner and the ' +
        "hold's counterparty on the active list, or no list): null, or the reason a capture would be refused",
    }),
  })
  .meta({ id: 'AuthorizationState' });
export type AuthorizationState = z.infer<typeof authorizationState>;

export const captureResult = z
  .object({
    authorization,
    spendId: z.string().meta({ description: 'The ledger row of the capture (refunds name it)' }),
    screening: paymentScreening.meta({
      description:
        'What the sanctions screen found at the capture: null (it passes), or, for a `settled` capture only, the ' +
        'reason it would have refused — the payment is recorded all the same',
    }),
  })
  .meta({ id: 'CaptureResult' });

export const authorizationList = z.object({
  authorizations: z.array(authorization),
  nextCursor: z.string().nullable(),
});

export const listAuthorizationsQuery = z.strictObject({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
  status: authorizationStatus.optional(),
});

export const spendEntry = z
  .object({
    spendId: z.string(),
    kind: z.enum(['spend', 'capture', 'authorization']).meta({
      description: 'spend: debited at once; capture: of a hold; authorization: a hold that was refused',
    }),
    asset: z.string(),
    amount: z.string(),
    accepted: z.boolean(),
    reason: z.string().nullable(),
    counterparty: z.string().nullable(),
    refunded: z.string(),
    authorizationId: z.string().nullable(),
    actorKeyId: z.string().nullable(),
    createdAt: unixSeconds,
  })
  .meta({ id: 'SpendEntry' });

export const spendList = z.object({ spends: z.array(spendEntry), nextCursor: z.string().nullable() });

export const listSpendsQuery = timeRangedQuery({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
  status: z.enum(['accepted', 'refused']).optional(),
  asset: asset.optional(),
});
export type ListSpendsQuery = z.infer<typeof listSpendsQuery>;

export const spendParams = z.object({
  address,
  spendId: z.string().regex(/^[1-9]\d{0,17}$/, 'must be a spend id'),
});

export const refundBody = z.strictObject({
  amount: positiveAmount.optional().meta({ description: 'At most what is left to refund; absent → all of it' }),
  reason: z.string().trim().min(1).max(500).optional(),
});

export const refundResult = z
  .object({
    refundId: z.string(),
    spendId: z.string(),
    amount: z.string(),
    refunded: z.string().meta({ description: 'Everything refunded of the spend so far' }),
    restoredDaily: z.string().meta({ description: "Given back to today's window (0 when the spend's day has passed)" }),
    restoredMonthly: z
      .string()
      .meta({ description: "Given back to this month's window (0 when its month has passed)" }),
    createdAt: unixSeconds,
  })
  .meta({ id: 'RefundResult' });
