import { optionalString, parseConfig, positiveInt, sharedEnv } from '@vouch/config';
import { concurrencyFrom, type QueueName, queueNames } from '@vouch/jobs';
import { z } from 'zod';

export const workerConfigSchema = z.object({
  ...sharedEnv,
  REDIS_URL: z.string().min(1, 'REDIS_URL is required: workers take their jobs from Redis'),
  /** Comma-separated queues this process works; default all. */
  WORKER_QUEUES: optionalString,
  WORKER_CONCURRENCY: positiveInt(4),
  WORKER_LOCK_DURATION_MS: positiveInt(30_000),
  WORKER_STALLED_INTERVAL_MS: positiveInt(30_000),
  BULLMQ_PREFIX: z.string().default('vouch'),
  SHUTDOWN_TIMEOUT_MS: positiveInt(30_000),
});

export type WorkerConfig = z.output<typeof workerConfigSchema> & {
  queues: QueueName[];
  concurrency: (queue: QueueName) => number;
};

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const base = parseConfig(workerConfigSchema, env);
  const queues = resolveQueues(base.WORKER_QUEUES);
  return { ...base, queues, concurrency: concurrencyFrom(env, base.WORKER_CONCURRENCY) };
}

export function resolveQueues(list: string | undefined): QueueName[] {
  if (!list) return [...queueNames];
  const wanted = list
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = wanted.filter((q) => !(queueNames as readonly string[]).includes(q));
  if (unknown.length)
    throw new Error(`WORKER_QUEUES names unknown queues: ${unknown.join(', ')} (known: ${queueNames.join(', ')})`);
  return wanted as QueueName[];
}
