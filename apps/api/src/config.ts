import { ConfigError, optionalString, parseConfig, positiveInt, sharedEnv } from '@vouch/config';
import { z } from 'zod';
import { checkEdgeConfig, edgeEnv } from './edge-config.ts';

export const apiConfigSchema = z.object({
  ...sharedEnv,
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  /** Comma-separated addresses/CIDRs of trusted proxies (Fastify trustProxy semantics). */
  TRUST_PROXY: optionalString,
  BODY_LIMIT_BYTES: positiveInt(1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: positiveInt(10_000),
  /** How long a request waits for its job before answering 202 with the job id. */
  JOB_WAIT_TIMEOUT_MS: positiveInt(10_000),
  RECOMPUTE_CHUNK_SIZE: positiveInt(250),
  BULLMQ_PREFIX: z.string().default('vouch'),
  /** `all` (npm start): with REDIS_URL also runs a worker in this process; `api`: the API alone. */
  VOUCH_ROLE: z.enum(['all', 'api']).default('all'),
  /** Jobs per queue run at once by the in-process runner or the in-process worker. */
  WORKER_CONCURRENCY: positiveInt(4),
  /** Keep scores and budget rows in a per-process cache invalidated by database notifications. */
  CACHE_READS: z
    .enum(['on', 'off'])
    .default('on')
    .transform((v) => v === 'on'),
  /** Write the answers finished in one event-loop turn together (plugins/coalesce-writes.ts). */
  COALESCE_WRITES: z
    .enum(['on', 'off'])
    .default('on')
    .transform((v) => v === 'on'),
  ...edgeEnv,
});

export type ApiConfig = z.output<typeof apiConfigSchema>;

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const config = parseConfig(apiConfigSchema, env);
  // AUTH on (the production default) with nobody able to administer keys is refused.
  const problem = checkEdgeConfig(config);
  if (problem) throw new ConfigError(`invalid configuration:\n  ADMIN_API_KEY: ${problem}`);
  return config;
}
