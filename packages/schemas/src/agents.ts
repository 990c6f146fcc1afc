import { z } from 'zod';
import { erc8004Identity } from './erc8004.ts';
import {
  address,
  colorValue,
  gradeValue,
  hexBytes,
  pageLimit,
  queryBoolean,
  queryInteger,
  scoreValue,
  unixSeconds,
} from './primitives.ts';

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
    erc8004: erc8004Identity.nullable().meta({
      description: 'Its ERC-8004 identity on the indexed chain, resolved from the indexed events; null: none',
    }),
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof agent>;

export const scoreConfidence = {
  confidence: z.number().min(0).max(1).meta({
    description:
      'How much the score can be relied on, 0–1: counted transactions n/(n+10) × days known/30 (at most 1); docs/api.md',
  }),
  state: z.enum(['established', 'insufficient_history']).meta({
    description: 'insufficient_history: fewer than 5 counted transactions or known for less than 7 days',
  }),
};

export const agentScore = z.object({ score: scoreValue, grade: gradeValue, color: colorValue, ...scoreConfidence });

/** How deep metadata may nest (objects and arrays). */
export const METADATA_MAX_DEPTH = 32;

/**
 * Whether a JSON value nests at most `max` levels, found without recursion: a hostile
 * body can nest 60,000 levels, which would overflow the stack of JSON.stringify (a 500).
 */
export function nestsAtMost(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return false;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return true;
}

const utf8 = new TextEncoder();

export const metadataObject = z.record(z.string().max(64), z.unknown()).superRefine((value, ctx) => {
  // Checked first, so that the checks below never see a value too deep to serialize.
  if (!nestsAtMost(value, METADATA_MAX_DEPTH)) {
    ctx.addIssue({ code: 'custom', message: `metadata must not nest deeper than ${METADATA_MAX_DEPTH} levels` });
    return;
  }
  const text = JSON.stringify(value);
  // Bytes of its UTF-8, not characters: "€" is one character and three bytes.
  if (utf8.encode(text).length > 4096) {
    ctx.addIssue({ code: 'custom', message: 'metadata must serialize to at most 4096 bytes' });
  }
  // Postgres jsonb cannot hold U+0000.
  if (text.includes('\\u0000')) ctx.addIssue({ code: 'custom', message: 'metadata must not contain U+0000' });
});

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
    limit: pageLimit(),
    cursor: z.string().max(512).optional(),
    minScore: queryInteger(0, 1000).optional(),
    maxScore: queryInteger(0, 1000).optional(),
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

export const scoreHistoryQuery = z.strictObject({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
});
export type ScoreHistoryQuery = z.infer<typeof scoreHistoryQuery>;

export const scoreEvent = z
  .object({
    previousScore: scoreValue,
    score: scoreValue,
    source: z.enum(['manual', 'batch', 'model']).meta({
      description: 'manual: POST /api/agents/:address/score; batch: batch-scores; model: a recomputation',
    }),
    reason: z.string().nullable(),
    changedAt: unixSeconds,
  })
  .meta({ id: 'ScoreEvent' });

export const scoreHistory = z.object({
  address: z.string(),
  events: z.array(scoreEvent).meta({ description: 'Newest first' }),
  nextCursor: z.string().nullable(),
});
