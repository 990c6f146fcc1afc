import { z } from 'zod';
import { amount, positiveAmount, unixSeconds } from './primitives.ts';

export const setBudgetBody = z
  .strictObject({
    dailyLimit: amount.optional(),
    monthlyLimit: amount.optional(),
    perTxLimit: amount.optional(),
  })
  .refine((b) => b.dailyLimit !== undefined || b.monthlyLimit !== undefined || b.perTxLimit !== undefined, {
    message: 'at least one of dailyLimit, monthlyLimit, perTxLimit is required',
  });
export type SetBudgetInput = z.infer<typeof setBudgetBody>;

export const amountBody = z.strictObject({ amount: positiveAmount });

export const budget = z
  .object({
    dailyLimit: z.string(),
    dailySpent: z.string(),
    monthlyLimit: z.string(),
    monthlySpent: z.string(),
    perTxLimit: z.string(),
    dailyRemaining: z.string(),
    monthlyRemaining: z.string(),
    dailyResetsAt: unixSeconds,
    monthlyResetsAt: unixSeconds,
    updatedAt: unixSeconds,
  })
  .meta({ id: 'Budget' });
export type Budget = z.infer<typeof budget>;

export const refusalReason = z
  .enum(['SANCTIONED', 'PER_TX_LIMIT', 'DAILY_LIMIT', 'MONTHLY_LIMIT', 'NO_BUDGET'])
  .meta({ description: 'SANCTIONED: the agent or its owner is on the active sanctions list; checked first' });
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
