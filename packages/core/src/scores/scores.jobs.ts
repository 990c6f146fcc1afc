import { jobs, type Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

interface ChunkResult {
  scored: number;
  updated: number;
  worker: string;
}

/**
 * Batch scores: the parallel arrays applied atomically by one worker. Its last attempt, when it
 * fails, gives the key's claim up (nobody may be waiting: the request was answered 202).
 */
export const batchScoresProcessor =
  (services: Services): Processor<typeof jobs.batchScores> =>
  (payload, ctx) =>
    services.scores.applyBatch(payload.entries, ctx.jobId, payload.actor, payload.idempotency, {
      lastAttempt: ctx.attempt >= jobs.batchScores.options.attempts,
    });

/** One chunk of a recomputation: the model over these agents, stored where it changed. */
export const recomputeChunkProcessor =
  (services: Services, worker: string): Processor<typeof jobs.recomputeChunk> =>
  async (payload, ctx) => ({ ...(await services.scores.recompute(payload.agents, ctx.jobId)), worker });

/** The same for one agent, after a transaction was recorded for it; a score a client set is kept. */
export const refreshAgentProcessor =
  (services: Services, worker: string): Processor<typeof jobs.refreshAgent> =>
  async (payload, ctx) => ({
    ...(await services.scores.recompute([payload.agent], ctx.jobId, { keepOverrides: true })),
    worker,
  });

/** The parent of a recomputation runs after its chunks and sums their results. */
export const recomputeProcessor = (): Processor<typeof jobs.recompute> => async (payload, ctx) => {
  const chunks = (await ctx.childrenValues()) as ChunkResult[];
  const scored = chunks.reduce((n, c) => n + c.scored, 0);
  const updated = chunks.reduce((n, c) => n + c.updated, 0);
  return {
    agents: payload.agents,
    chunks: chunks.length,
    updated,
    unchanged: scored - updated,
    workers: [...new Set(chunks.map((c) => c.worker))].sort(),
  };
};
