import { z } from 'zod';
import { scoreConfidence } from './agents.ts';
import { erc8004Evidence } from './erc8004.ts';
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
    ...scoreConfidence,
    factors,
    counted: z
      .object({
        basis: z.enum(['verified', 'all']).meta({
          description: 'verified: only transactions verified on the chain count; all: every recorded one, as reported',
        }),
        chainConfigured: z.boolean().meta({
          description: 'Whether recorded transactions are checked against a chain; false: they are all self-reported',
        }),
        detail: z.string(),
        transactions: z.number().int().meta({ description: 'Transactions the model counted' }),
        // Sums: may exceed 2^256−1.
        volume: z.string().meta({ description: 'Their volume in wei' }),
        leftOutTransactions: z.number().int().meta({ description: 'Recorded transactions left out: not verified' }),
        leftOutVolume: z.string().meta({ description: 'Their volume in wei' }),
      })
      .meta({
        id: 'ScoreCounted',
        description: 'Which recorded transactions the factors count, and what was left out',
      }),
    modelScore: scoreValue.meta({ description: 'The five factors alone, before the ERC-8004 adjustment' }),
    erc8004: erc8004Evidence,
  })
  .meta({ id: 'ScoreBreakdown' });
