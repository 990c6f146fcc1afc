import { type JobInfo, type JobRunner, jobs, type RunOutcome } from '@vouch/jobs';
import type { AuditService } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { KeyedJob } from '../idempotency/idempotency.service.ts';
import type { Actor } from '../shared/actor.ts';
import { DomainError, ForbiddenError, ValidationError } from '../shared/errors.ts';
import type { BatchEntry, ScoresService } from './scores.service.ts';

export interface ScoringJobsDeps {
  runner: JobRunner;
  scores: ScoresService;
  audit: AuditService;
  /** Agents per recomputation job (N workers share the chunks). */
  chunkSize: number;
  /** Delay before a refresh after a recorded transaction, collecting bursts into one job. */
  refreshDelayMs?: number;
  onRefreshError?: (error: unknown, agent: string) => void;
  /** How often refreshes that could not be queued are tried again. */
  refreshRetryMs?: number;
  /** This process's read cache: a batch it answered is seen by its next read (docs/cache.md). */
  cache?: ReadCache | undefined;
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
  audit,
  chunkSize,
  refreshDelayMs = 1000,
  onRefreshError,
  refreshRetryMs = 1000,
  cache,
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
    /**
     * Validates the whole batch here, before anything is queued; a worker applies it atomically.
     * Under an Idempotency-Key (`keyed`, from `idempotency.forJob`) the job's id is the key's claim's,
     * so a retry joins the first request's job, and the worker stores the answer under the key.
     */
    async batch(
      actor: Actor,
      input: BatchInput,
      keyed?: { keyed: KeyedJob; joined?: boolean },
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
      // A retry of a claimed request joins the job the claim queued: what the agents are now, or
      // who this retry is (another key of the organization), must not refuse it here. Such a
      // refusal would be stored as the key's answer and refuse the first request's job. The worker
      // checks registration and ownership itself, for the job's actor.
      if (!keyed?.joined) await scores.assertBatchable(agents, actor);
      const entries: BatchEntry[] = agents.map((address, i) => ({
        address,
        score: values[i] as number,
        reason: reasons[i] as string,
      }));
      const outcome = await runner.run(
        jobs.batchScores,
        { entries, actor: jobActorOf(actor), ...(keyed && { idempotency: keyed.keyed }) },
        keyed && { jobKey: keyed.keyed.claim },
      );
      // Read your own write: the cached scores go before the answer does, not when the notification comes.
      if (outcome.state === 'completed') for (const address of agents) cache?.invalidate('agents', address);
      return outcome;
    },

    /** Recomputes the given agents (or all), split into chunk jobs under one parent job. */
    async recompute(actor: Actor, input: { agents?: string[]; all?: boolean }) {
      if (input.all && !actor.operator) {
        throw new ForbiddenError('only the operator (ADMIN_API_KEY) recomputes every agent; name your agents');
      }
      const addresses = input.all ? await scores.allAddresses() : [...new Set(input.agents ?? [])];
      // A score an organization set holds until it (or the model over its own agents) changes it.
      if (!input.all) await assertKnown(scores, addresses, actor);
      const children = [];
      for (let i = 0; i < addresses.length; i += chunkSize) {
        children.push({ job: jobs.recomputeChunk, payload: { agents: addresses.slice(i, i + chunkSize) } });
      }
      const outcome = await runner.runFlow(
        jobs.recompute,
        { agents: addresses.length, chunks: children.length, organizationId: actor.organizationId },
        children,
        {
          // The model is the same for everyone; who asked for it is still on record, once it is
          // queued: a queue that is away (503) leaves no entry for a recomputation that never ran.
          onQueued: (jobId) =>
            audit.record(actor, 'score.recompute', null, {
              all: input.all === true,
              agents: input.all ? addresses.length : addresses,
              jobId,
            }),
        },
      );
      // Read your own write, as after a batch.
      if (outcome.state === 'completed') {
        if (input.all) cache?.invalidate('agents', '*');
        else for (const address of addresses) cache?.invalidate('agents', address);
      }
      return outcome;
    },

    /** Schedules a deduplicated model refresh of one agent; never fails the caller (retried while the queue is away). */
    refresh(agent: string): void {
      enqueueRefresh(agent).catch((error) => {
        onRefreshError?.(error, agent);
        if (unsent.size < MAX_UNSENT_REFRESHES) unsent.add(agent);
        retryLater();
      });
    },

    /**
     * A job the actor's organization queued; another organization's is not found, and so is one of
     * the service's own (refreshes, webhook deliveries, sweeps: no organization), whose ids are
     * sequential and would tell anyone of every organization's activity. The operator reads all.
     */
    async get(actor: Actor, jobId: string): Promise<JobInfo> {
      const info = await runner.get(jobId);
      const foreign = !actor.operator && info?.organizationId !== actor.organizationId;
      if (!info || foreign)
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

/** The actor as a job payload carries it. */
export function jobActorOf(actor: Actor) {
  return {
    organizationId: actor.organizationId,
    kind: actor.kind,
    keyId: actor.keyId,
    operator: actor.operator,
    ...(actor.requestId !== undefined && { requestId: actor.requestId }),
  };
}

async function assertKnown(scores: ScoresService, addresses: string[], actor: Actor) {
  try {
    await scores.assertBatchable(addresses, actor);
  } catch (error) {
    // Recomputation also covers observed agents; only unknown ones are refused.
    if (error instanceof DomainError && error.code === 'AGENT_NOT_REGISTERED') return;
    throw error;
  }
}

export type ScoringJobs = ReturnType<typeof createScoringJobs>;
