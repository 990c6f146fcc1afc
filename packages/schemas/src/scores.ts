import { z } from 'zod';
import { amount, colorValue, gradeValue, scoreValue } from './primitives.ts';

const ratio = z.number().min(0).max(1);

export const computeBody = z.strictObject({
  successRate: ratio,
  totalVolume: amount,
  transactionCount: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  budgetCompliance: ratio,
  accountAge: z.number().nonnegative().max(1e6).meta({ description: 'Days since the agent was first known' }),
});
export type ComputeInput = z.infer<typeof computeBody>;

const factor = z.object({ value: z.number(), weight: z.number(), contribution: z.number().int() });
export const factors = z.object({
  successRate: factor,
  volume: factor,
  count: factor,
  budgetCompliance: factor,
  accountAge: factor,
});

export const computeResult = z.object({ score: scoreValue, grade: gradeValue, color: colorValue, factors });

export const scoreBreakdown = z
  .object({
    agent: z.string(),
    score: scoreValue,
    grade: gradeValue,
    color: colorValue,
    currentScore: scoreValue.meta({ description: 'The stored score (what GET /api/agents/:address/score returns)' }),
    factors,
  })
  .meta({ id: 'ScoreBreakdown' });
