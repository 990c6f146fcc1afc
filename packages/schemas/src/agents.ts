import { z } from 'zod';
import { address, colorValue, gradeValue, hexBytes, queryBoolean, scoreValue, unixSeconds } from './primitives.ts';

export const agentParams = z.object({ address });

export const agentListItem = z.object({
  address: z.string(),
  score: scoreValue,
  grade: gradeValue,
  isRegistered: z.boolean(),
});

export const agent = z
  .object({
    address: z.string(),
    score: scoreValue,
    grade: gradeValue,
    color: colorValue,
    isRegistered: z.boolean(),
    owner: z.string().nullable(),
    ownerChangedAt: unixSeconds
      .nullable()
      .meta({ description: 'When the owner last changed (not set by registration)' }),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    firstSeenAt: unixSeconds,
    registeredAt: unixSeconds.nullable(),
    lastUpdated: unixSeconds,
    transactionCount: z.number().int().nonnegative(),
    totalVolume: z.string(),
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof agent>;

export const agentScore = z.object({ score: scoreValue, grade: gradeValue, color: colorValue });

const metadataObject = z
  .record(z.string().max(64), z.unknown())
  .refine((value) => JSON.stringify(value).length <= 4096, { message: 'metadata must serialize to at most 4096 bytes' })
  // Postgres jsonb cannot hold U+0000.
  .refine((value) => !JSON.stringify(value).includes('\\u0000'), { message: 'metadata must not contain U+0000' });

export const registerBody = z.strictObject({
  address,
  owner: address.optional(),
  metadata: metadataObject.optional(),
});
export type RegisterInput = z.infer<typeof registerBody>;

export const setScoreBody = z.strictObject({
  score: scoreValue.meta({ description: 'New score, integer 0 to 1000' }),
  reason: hexBytes,
});
export type SetScoreInput = z.infer<typeof setScoreBody>;

export const scoreChange = z.object({
  address: z.string(),
  previousScore: scoreValue,
  score: scoreValue,
  grade: gradeValue,
  color: colorValue,
  reason: z.string(),
  updatedAt: unixSeconds,
});

export const sortOrder = z.enum(['score_desc', 'score_asc', 'recent']);
export type SortOrder = z.infer<typeof sortOrder>;

export const listQuery = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: z.string().max(512).optional(),
    minScore: z.coerce.number().int().min(0).max(1000).optional(),
    maxScore: z.coerce.number().int().min(0).max(1000).optional(),
    grade: gradeValue.optional(),
    registered: queryBoolean.optional(),
    sort: sortOrder.default('score_desc'),
  })
  .refine((q) => q.minScore === undefined || q.maxScore === undefined || q.minScore <= q.maxScore, {
    message: 'minScore must not exceed maxScore',
    path: ['minScore'],
  });
export type ListQuery = z.infer<typeof listQuery>;

export const agentList = z.object({
  agents: z.array(agentListItem),
  total: z.number().int().nonnegative(),
  nextCursor: z.string().nullable(),
});
