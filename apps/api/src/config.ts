import { optionalString, parseConfig, positiveInt, sharedEnv } from '@vouch/config';
import { z } from 'zod';

export const apiConfigSchema = z.object({
  ...sharedEnv,
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  /** Comma-separated addresses/CIDRs of trusted proxies (Fastify trustProxy semantics). */
  TRUST_PROXY: optionalString,
  BODY_LIMIT_BYTES: positiveInt(1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: positiveInt(10_000),
});

export type ApiConfig = z.output<typeof apiConfigSchema>;

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  return parseConfig(apiConfigSchema, env);
}
