import { z } from 'zod';
import { address, gradeValue, hexBytes, unixSeconds } from './primitives.ts';

export const jobAccepted = z
  .object({
    jobId: z.string(),
    status: z.string().meta({ description: 'Where the job is: waiting, delayed, active, waiting-children' }),
  })
  .meta({ id: 'JobAccepted', description: 'The wait ran out; poll GET /api/jobs/:id for the result' });

export const jobInfo = z
  .object({
    id: z.string(),
    name: z.string(),
    queue: z.string(),
    status: z.enum(['waiting', 'delayed', 'active', 'waiting-children', 'completed', 'failed', 'unknown']),
    progress: z.number(),
    result: z.unknown(),
    error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }).nullable(),
    createdAt: unixSeconds.meta({ description: 'When the job was queued (unix seconds)' }),
    finishedAt: unixSeconds.nullable().meta({ description: 'When it completed or failed (unix seconds)' }),
  })
  .meta({ id: 'Job' });

export const jobParams = z.object({ id: z.string().min(1).max(200) });

export const batchScoresBody = z.strictObject({
  agents: z.array(address).min(1).max(1000),
  scores: z.array(z.number().int().min(0).max(1000)).min(1).max(1000),
  reasons: z.array(hexBytes).min(1).max(1000),
});

export const batchScoresResult = z.object({
  updated: z.number().int(),
  agents: z.array(z.object({ address: z.string(), score: z.number().int(), grade: gradeValue })),
});

export const recomputeBody = z.union([
  z.strictObject({ agents: z.array(address).min(1).max(100_000) }),
  z.strictObject({ all: z.literal(true) }),
]);

export const recomputeResult = z.object({
  agents: z.number().int(),
  chunks: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  workers: z.array(z.string()),
});
