import { type JobInfo, type JobRunner, jobs, type RunOutcome } from '@vouch/jobs';
import { DomainError, ValidationError } from '../shared/errors.ts';
import type { BatchEntry, ScoresService } from './scores.service.ts';

export interface ScoringJobsDeps {
  runner: JobRunner;
  scores: ScoresService;
  /** Agents per recomputation job (N workers share the chunks). */
  chunkSize: number;
  /** Delay before a refresh after a recorded transaction, collecting bursts into one job. */
  refreshDelayMs?: number;
  onRefreshError?: (error: unknown, agent: string) => void;
  /** How often refreshes that could not be queued are tried again. */
  refreshRetryMs?: number;
}

/** Refreshes held for a retry while the queue is unreachable; beyond this a recomputation catches up. */
export const MAX_UNSENT_REFRESHES = 10_000;

export interface BatchInput {
  agents: string[];
  scores: number[];
  reasons: string[];
}

/** Use cases that run on the job queue: batch scoring and model recomputation. */
export function createScoringJobs({
  runner,
  scores,
  chunkSize,
  refreshDelayMs = 1000,
  onRefreshError,
  refreshRetryMs = 1000,
}: ScoringJobsDeps) {
  const enqueueRefresh = (agent: string) =>
    runner.enqueue(jobs.refreshAgent, { agent }, { dedupeId: `refresh:${agent}`, delayMs: refreshDelayMs });

  // A refresh that could not be queued (Redis away) is kept and tried again until the queue
  // takes it, so a transaction recorded during an outage still refreshes its agent's score
  // once Redis is back, without a restart. In memory: a restart forgets them.
  const unsent = new Set<string>();
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  function retryLater() {
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void flushUnsent();
    }, refreshRetryMs);
    retryTimer.unref?.();
  }
  async function flushUnsent() {
    for (const agent of [...unsent]) {
      try {
        await enqueueRefresh(agent);
        unsent.delete(agent);
      } catch {
        retryLater();
        return;
      }
    }
  }

  return {
    /** Validates the whole batch here, before anything is queued; a worker applies it atomically. */
    async batch(
      input: BatchInput,
    ): Promise<RunOutcome<{ updated: number; agents: Array<{ address: string; score: number; grade: string }> }>> {
      const { agents, scores: values, reasons } = input;
      if (agents.length !== values.length || agents.length !== reasons.length) {
        throw new ValidationError([
          {
            path: 'body',
            message: `agents (${agents.length}), scores (${values.length}) and reasons (${reasons.length}) must have the same length`,
          },
        ]);
      }
      const firstIndex = new Map<string, number>();
      const duplicates: number[] = [];
      agents.forEach((a, i) => {
        if (firstIndex.has(a)) duplicates.push(i);
        else firstIndex.set(a, i);
      });
      if (duplicates.length) {
        throw new ValidationError(
          duplicates.map((i) => ({ path: `body.agents[${i}]`, message: `${agents[i]} appears more than once` })),
        );
      }
      await scores.assertBatchable(agents);
      const entries: BatchEntry[] = agents.map((address, i) => ({
        address,
        score: values[i] as number,
        reason: reasons[i] as string,
      }));
      return runner.run(jobs.batchScores, { entries });
    },

    /** Recomputes the given agents (or all), split into chunk jobs under one parent job. */
    async recompute(input: { agents?: string[]; all?: boolean }) {
      const addresses = input.all ? await scores.allAddresses() : [...new Set(input.agents ?? [])];
      if (!input.all) await assertKnown(scores, addresses);
      const children = [];
      for (let i = 0; i < addresses.length; i += chunkSize) {
        children.push({ job: jobs.recomputeChunk, payload: { agents: addresses.slice(i, i + chunkSize) } });
      }
      return runner.runFlow(jobs.recompute, { agents: addresses.length, chunks: children.length }, children);
    },

    /** Schedules a deduplicated model refresh of one agent; never fails the caller (retried while the queue is away). */
    refresh(agent: string): void {
      enqueueRefresh(agent).catch((error) => {
        onRefreshError?.(error, agent);
        if (unsent.size < MAX_UNSENT_REFRESHES) unsent.add(agent);
        retryLater();
      });
    },

    async get(jobId: string): Promise<JobInfo> {
      const info = await runner.get(jobId);
      if (!info)
        throw new DomainError('JOB_NOT_FOUND', `job ${jobId} is not known (finished jobs are kept for a limited time)`);
      // The transports keep milliseconds; the API speaks unix seconds everywhere.
      return {
        ...info,
        createdAt: Math.floor(info.createdAt / 1000),
        finishedAt: info.finishedAt === null ? null : Math.floor(info.finishedAt / 1000),
      };
    },
  };
}

async function assertKnown(scores: ScoresService, addresses: string[]) {
  try {
    await scores.assertBatchable(addresses);
  } catch (error) {
    // Recomputation also covers observed agents; only unknown ones are refused.
    if (error instanceof DomainError && error.code === 'AGENT_NOT_REGISTERED') return;
    throw error;
  }
}

export type ScoringJobs = ReturnType<typeof createScoringJobs>;
