import { z } from 'zod';
import { asset } from './budgets.ts';
import { address, pageLimit, positiveAmount, txHash, unixSeconds } from './primitives.ts';

export const transactionTypes = ['PAYMENT', 'SWAP', 'TRANSFER', 'CONTRACT_CALL', 'BRIDGE', 'OTHER'] as const;

/**
 * What the chain said about a recorded transaction (docs/api.md "Transactions"): `unverified`
 * when no chain is configured (self-reported), `pending` until the check has run, then
 * `verified`, `mismatch` (the chain disagrees; the detail names the fields), `not_found` (no such
 * transaction on the chain) or `unreachable` (the node did not answer: could not check).
 */
export const chainStatuses = ['unverified', 'pending', 'verified', 'mismatch', 'not_found', 'unreachable'] as const;
export type ChainStatus = (typeof chainStatuses)[number];

export const recordBody = z.strictObject({
  agent: address,
  txHash,
  amount: positiveAmount,
  asset: asset.optional().meta({
    description:
      'CAIP-19 id of what moved, `amount` in its atomic units; absent or empty: the native unit (wei). Only native volume counts toward the score',
  }),
  type: z
    .number()
    .int()
    .min(0)
    .max(5)
    .meta({ description: '0 PAYMENT, 1 SWAP, 2 TRANSFER, 3 CONTRACT_CALL, 4 BRIDGE, 5 OTHER' }),
  success: z.boolean().optional(),
  counterparty: address.optional(),
  timestamp: unixSeconds
    .optional()
    .meta({ description: 'When the transaction happened (unix seconds); defaults to now' }),
});
export type RecordInput = z.infer<typeof recordBody>;

export const transactionRecord = z
  .object({
    agent: z.string(),
    txHash: z.string(),
    amount: z.string(),
    asset: z.string().meta({ description: "CAIP-19 id of what moved; '' for the native unit (wei)" }),
    type: z.number().int(),
    typeName: z.enum(transactionTypes),
    success: z.boolean(),
    counterparty: z.string().nullable(),
    timestamp: unixSeconds,
    recordedAt: unixSeconds,
    backdated: z.boolean().meta({
      description: 'Dated before the agent was first seen: accepted, but self-reported history Vouch did not witness',
    }),
    chainStatus: z.enum(chainStatuses).meta({
      description:
        'What the chain said: unverified (no chain configured: self-reported), pending (check queued), verified, mismatch, not_found, unreachable (could not check)',
    }),
    chainDetail: z
      .string()
      .nullable()
      .meta({ description: 'Why: the fields the chain disagrees with, the node error, or the block that matched' }),
    chainCheckedAt: unixSeconds.nullable().meta({ description: 'When the chain was last asked; null before that' }),
  })
  .meta({ id: 'TransactionRecord' });
export type TransactionRecord = z.infer<typeof transactionRecord>;

export const transactionStats = z
  .object({
    totalCount: z.number().int(),
    successCount: z.number().int(),
    failedCount: z.number().int(),
    totalVolume: z.string(),
    lastTransactionTime: unixSeconds.meta({
      description: 'Unix seconds of the latest transaction; 0 when there is none',
    }),
  })
  .meta({ id: 'TransactionStats' });
export type TransactionStats = z.infer<typeof transactionStats>;

export const transactionList = z.object({
  transactions: z.array(transactionRecord),
  nextCursor: z.string().nullable(),
});

export const listTransactionsQuery = z.strictObject({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
});
