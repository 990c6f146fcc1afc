import { z } from 'zod';

/** Reads an optional env value; empty strings count as unset. */
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Settings every process shares (DESIGN §5). */
export const sharedEnv = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: optionalString,
  DATA_DIR: z.string().default('./.data'),
  REDIS_URL: optionalString,
  DB_POOL_MAX: positiveInt(10),
  DB_CONNECTION_TIMEOUT_MS: positiveInt(1000),
  MIGRATE_ON_START: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
};

export { optionalString, positiveInt };

export class ConfigError extends Error {}

/** Parses env once; the result is frozen. Errors name every bad key. */
export function parseConfig<T extends z.ZodType>(
  schema: T,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.output<T>> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(result.data);
}
