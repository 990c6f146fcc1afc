import { type QueueName, queueNames, RECOMPUTE_CHUNK_MAX } from '@vouch/config';
import { anomalyResult, chainStatuses, screeningResult, verificationResult } from '@vouch/schemas';
import { z } from 'zod';

export { type QueueName, queueNames };

export interface JobOptions {
  attempts: number;
  backoffMs: number;
  /** Completed jobs are kept this long (and at most `keepCount`) so late readers can fetch results. */
  keepCompletedSeconds: number;
  keepCount: number;
}

/** Failed jobs are kept this long (and at most `keepCount`), whatever the job: long enough to look into. */
export const FAILED_KEPT_SECONDS = 7 * 24 * 3600;

const defaults: JobOptions = { attempts: 3, backoffMs: 1000, keepCompletedSeconds: 3600, keepCount: 5000 };

export interface JobDefinition<
  N extends string = string,
  P extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  name: N;
  queue: QueueName;
  payload: P;
  result: R;
  options: JobOptions;
  /** Producers wait for this job's result (`run`, or the parent of `runFlow`); others are only enqueued. */
  awaited: boolean;
}

function defineJob<N extends string, P extends z.ZodType, R extends z.ZodType>(
  def: Omit<JobDefinition<N, P, R>, 'options' | 'awaited'> & { options?: Partial<JobOptions>; awaited?: boolean },
): JobDefinition<N, P, R> {
  return { ...def, awaited: def.awaited ?? false, options: { ...defaults, ...def.options } };
}

const address = z.string().regex(/^0x[0-9a-f]{40}$/);
const txHash = z.string().regex(/^0x[0-9a-f]{64}$/);
const scoredAgent = z.object({ address, score: z.number().int(), grade: z.string() });

/** Who queued a job: the worker acts for them (ownership, audit log), and only their organization reads the job. */
export const jobActor = z.object({
  organizationId: z.string(),
  kind: z.enum(['key', 'admin', 'anonymous', 'system']),
  keyId: z.string().nullable(),
  operator: z.boolean(),
  requestId: z.string().optional(),
});
/** The organization a job belongs to (`GET /api/jobs/:id` shows it to that organization only). */
const organizationId = z.string().optional();

/** The one list of jobs: name, queue, payload and result schemas, options. */
export const jobs = {
  batchScores: defineJob({
    name: 'scores.batch',
    queue: 'scores',
    awaited: true,
    payload: z.object({
      entries: z
        .array(z.object({ address, score: z.number().int().min(0).max(1000), reason: z.string() }))
        .min(1)
        .max(1000),
      actor: jobActor,
      /** The request's Idempotency-Key: the batch's answer is stored under it with its scores. */
      idempotency: z
        .object({ scope: z.string(), key: z.string(), requestHash: z.string(), claim: z.string() })
        .optional(),
    }),
    result: z.object({ updated: z.number().int(), agents: z.array(scoredAgent) }),
  }),
  recompute: defineJob({
    name: 'scores.recompute',
    queue: 'scores',
    awaited: true,
    payload: z.object({ agents: z.number().int(), chunks: z.number().int(), organizationId }),
    result: z.object({
      agents: z.number().int(),
      chunks: z.number().int(),
      updated: z.number().int(),
      unchanged: z.number().int(),
      workers: z.array(z.string()),
    }),
  }),
  recomputeChunk: defineJob({
    name: 'scores.recompute-chunk',
    queue: 'recompute',
    payload: z.object({ agents: z.array(address).min(1).max(RECOMPUTE_CHUNK_MAX) }),
    result: z.object({ scored: z.number().int(), updated: z.number().int(), worker: z.string() }),
  }),
  refreshAgent: defineJob({
    name: 'scores.refresh-agent',
    // A queue of its own: BullMQ keeps completed jobs per queue by count, so a burst of
    // refreshes trimmed the results of batch and recomputation jobs still being read.
    queue: 'refresh',
    payload: z.object({ agent: address }),
    result: z.object({ scored: z.number().int(), updated: z.number().int(), worker: z.string() }),
    options: { keepCompletedSeconds: 600, keepCount: 1000 },
  }),
  expireHolds: defineJob({
    name: 'maintenance.expire-holds',
    queue: 'maintenance',
    payload: z.object({}),
    result: z.object({ expired: z.number().int() }),
    options: { keepCompletedSeconds: 3600, keepCount: 100 },
  }),
  purgeIdempotency: defineJob({
    name: 'maintenance.purge-idempotency',
    queue: 'maintenance',
    payload: z.object({}),
    result: z.object({ purged: z.number().int() }),
    options: { keepCompletedSeconds: 86_400, keepCount: 100 },
  }),
  recheckTransactions: defineJob({
    name: 'maintenance.recheck-transactions',
    queue: 'maintenance',
    payload: z.object({}),
    result: z.object({ queued: z.number().int() }),
    options: { keepCompletedSeconds: 86_400, keepCount: 100 },
  }),
  erc8004Index: defineJob({
    name: 'maintenance.erc8004-index',
    queue: 'maintenance',
    payload: z.object({}),
    result: z.object({
      chainId: z.number().int().nullable(),
      ranges: z.number().int(),
      events: z.number().int(),
      files: z.number().int(),
      caughtUp: z.boolean(),
    }),
    // One run at a time per process (the maintenance queue); a failed run is tried again, then the
    // next scheduled run starts from the cursor the last good one left.
    options: { keepCompletedSeconds: 3600, keepCount: 100 },
  }),
  chainCheck: defineJob({
    name: 'checks.transaction',
    queue: 'checks',
    payload: z.object({ agent: address, txHash }),
    // `status` null: no such record (nothing to check).
    result: z.object({ status: z.enum(chainStatuses).nullable(), changed: z.boolean() }),
    // Nobody reads its result (the state is the row's). BullMQ trims a queue's finished jobs by
    // the age and count of the job that just finished; with count 0 a check is removed on its own
    // and trims nothing, so a burst of recorded transactions keeps the verifications' results.
    options: { keepCompletedSeconds: 0, keepCount: 0 },
  }),
  dispatchEvents: defineJob({
    name: 'webhooks.dispatch',
    queue: 'webhooks',
    // Fans new events out to the subscriptions that match them; asked for after a commit that
    // wrote events (deduplicated), and by every sweep.
    payload: z.object({}),
    result: z.object({ events: z.number().int(), deliveries: z.number().int() }),
    options: { keepCompletedSeconds: 0, keepCount: 0 },
  }),
  deliverWebhook: defineJob({
    name: 'webhooks.deliver',
    queue: 'webhooks',
    // One delivery of one event to one endpoint; its attempts and their schedule are the
    // delivery row's (the processor asks to run again later), so the job's own attempts only
    // cover unexpected errors. `run` changes when a delivery is sent again (retry, replay).
    payload: z.object({ deliveryId: z.string().regex(/^[1-9]\d{0,17}$/), run: z.number().int().min(1) }),
    result: z.object({ status: z.enum(['succeeded', 'failed', 'pending', 'gone']), attempts: z.number().int() }),
    options: { keepCompletedSeconds: 0, keepCount: 0 },
  }),
  sweepWebhooks: defineJob({
    name: 'webhooks.sweep',
    queue: 'webhooks',
    // Nothing is stranded: events written while the queue was away are fanned out, and due
    // deliveries whose job was lost are queued again.
    payload: z.object({}),
    result: z.object({ events: z.number().int(), deliveries: z.number().int(), requeued: z.number().int() }),
    options: { keepCompletedSeconds: 0, keepCount: 0 },
  }),
  purgeEvents: defineJob({
    name: 'maintenance.purge-events',
    queue: 'maintenance',
    payload: z.object({}),
    result: z.object({ purged: z.number().int() }),
    options: { keepCompletedSeconds: 86_400, keepCount: 100 },
  }),
  verify: defineJob({
    name: 'checks.verify',
    queue: 'checks',
    awaited: true,
    payload: z.object({ address, organizationId }),
    result: verificationResult,
  }),
  sanctions: defineJob({
    name: 'checks.sanctions',
    queue: 'checks',
    awaited: true,
    payload: z.object({ address, organizationId }),
    result: screeningResult,
  }),
  anomaly: defineJob({
    name: 'checks.anomaly',
    queue: 'checks',
    awaited: true,
    payload: z.object({
      agent: address,
      txHash: z.string().optional(),
      amount: z.string(),
      asset: z.string().optional(),
      type: z.number().int().min(0).max(5),
      counterparty: address.optional(),
      organizationId,
    }),
    result: anomalyResult,
  }),
} as const;

export type Jobs = typeof jobs;
export type JobKey = keyof Jobs;
export type AnyJob = Jobs[JobKey];
export type JobName = AnyJob['name'];
export type PayloadOf<J extends AnyJob> = z.input<J['payload']>;
export type ResultOf<J extends AnyJob> = z.output<J['result']>;

export const jobsByName: ReadonlyMap<string, AnyJob> = new Map(Object.values(jobs).map((j) => [j.name, j]));

export function jobsOfQueue(queue: QueueName): AnyJob[] {
  return Object.values(jobs).filter((j) => j.queue === queue);
}

/**
 * Queues with a job producers wait for: the producer follows their completion events. A
 * recomputation's chunks are children of a flow whose parent is awaited on `scores`; nobody
 * waits for a chunk itself, so events of `recompute` are not followed (each chunk's events
 * would wake every API process during a recomputation for nothing).
 */
export const awaitedQueues: readonly QueueName[] = queueNames.filter((q) => jobsOfQueue(q).some((j) => j.awaited));

/** `run` and `runFlow` take awaited jobs only: a job nobody waits for is enqueued. */
export function assertAwaited(job: AnyJob): void {
  if (!job.awaited) throw new Error(`${job.name} is not an awaited job: enqueue it instead`);
}
