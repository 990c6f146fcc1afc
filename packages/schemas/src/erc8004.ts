import { z } from 'zod';
import { address, unixSeconds } from './primitives.ts';

/** An agent's ERC-8004 identity on the indexed chain (docs/erc8004.md). */
export const erc8004Identity = z
  .object({
    chainId: z.number().int(),
    agentId: z.string().meta({ description: 'The Identity Registry token id (uint256, decimal)' }),
    agentURI: z.string(),
    owner: z.string(),
    agentWallet: z
      .string()
      .nullable()
      .meta({ description: 'The verified wallet (metadata agentWallet); null once cleared' }),
  })
  .meta({ id: 'Erc8004Identity' });

const indexStatus = z.enum(['not_configured', 'not_indexed', 'current', 'behind', 'unavailable']).meta({
  description:
    'current: indexed up to head less ERC8004_CONFIRMATIONS; behind: still catching up; unavailable: the last run failed or is too old; not_indexed: never ran through; not_configured: no CHAIN_RPC_URL',
});

const verdict = z.enum(['counted', 'revoked', 'not_a_rating', 'self_related', 'sanctioned_client', 'superseded']);

/** What the indexed feedback says about the agent, and what it does to the score. */
export const erc8004Evidence = z
  .object({
    status: indexStatus,
    detail: z.string(),
    chainId: z.number().int().nullable(),
    indexedToBlock: z.string().nullable(),
    headBlock: z.string().nullable(),
    checkedAt: unixSeconds.nullable().meta({ description: 'When the index was last brought up to date' }),
    identity: erc8004Identity.nullable(),
    feedback: z.object({
      total: z.number().int(),
      counted: z.number().int(),
      revoked: z.number().int(),
      notARating: z.number().int(),
      selfRelated: z.number().int(),
      sanctionedClients: z.number().int(),
      superseded: z
        .number()
        .int()
        .meta({ description: "Ratings a later one of the same client's replaced: each client counts once" }),
      unknownClients: z.number().int(),
      paymentBacked: z.number().int(),
    }),
    rating: z.number().nullable().meta({ description: 'Weighted mean of the counted ratings, 0–100' }),
    weight: z.number().meta({ description: 'Σ of the counted feedback weights' }),
    confidence: z.number().meta({ description: 'min(1, weight ÷ 5)' }),
    adjustment: z
      .number()
      .int()
      .meta({ description: 'Points the feedback adds to the model score (negative: takes away)' }),
    applied: z
      .boolean()
      .meta({ description: 'Whether the adjustment is in `score` (a positive one needs status current)' }),
    entries: z
      .array(
        z.object({
          client: z.string(),
          feedbackIndex: z.string(),
          value: z.string(),
          valueDecimals: z.number().int(),
          tag1: z.string(),
          tag2: z.string(),
          revoked: z.boolean(),
          responses: z.number().int(),
          proofOfPayment: z.boolean(),
          paymentBacked: z.boolean(),
          clientScore: z.number().int().nullable(),
          verdict,
          weight: z.number(),
        }),
      )
      .meta({ description: 'Newest first, at most 100 (all are counted)' }),
  })
  .meta({ id: 'Erc8004Evidence' });

export const erc8004FeedbackBody = z.strictObject({
  clientAddress: address
    .optional()
    .meta({ description: 'Who will send the prepared transaction (without ERC8004_SIGNER_KEY); named in the file' }),
});

export const erc8004FileParams = z.object({
  address,
  id: z.string().regex(/^fb_[0-9a-f]{24}$/, 'a feedback id: fb_ and 24 hex digits'),
});

export const erc8004FeedbackResult = z
  .object({
    id: z.string(),
    agent: z.string(),
    identity: erc8004Identity,
    reputationRegistry: z.string(),
    clientAddress: z.string().nullable(),
    value: z.number().int(),
    valueDecimals: z.number().int(),
    tag1: z.string(),
    tag2: z.string(),
    endpoint: z.string(),
    feedbackURI: z.string(),
    feedbackHash: z.string(),
    file: z.string().meta({ description: 'The feedback file, exactly the bytes feedbackHash (keccak256) covers' }),
    transaction: z
      .object({ chainId: z.number().int(), to: z.string(), data: z.string() })
      .meta({ description: 'The giveFeedback call, to send from clientAddress' }),
    sent: z.boolean(),
    txHash: z.string().nullable(),
    createdAt: unixSeconds,
  })
  .meta({ id: 'Erc8004Feedback' });
