import { z } from 'zod';

/** Reads an optional env value; empty strings count as unset. */
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const nonNegative = (fallback: number) => z.coerce.number().nonnegative().default(fallback);

/** Settings of the checks (verification and anomaly thresholds, the chain); see docs/checks.md. */
export const checksEnv = {
  CHAIN_RPC_URL: optionalString,
  VERIFY_MIN_AGE_DAYS: nonNegative(1),
  VERIFY_MIN_TRANSACTIONS: nonNegative(1),
  VERIFY_ACTIVITY_WINDOW_DAYS: positiveInt(30),
  VERIFY_OWNER_STABLE_DAYS: nonNegative(7),
  VERIFY_MIN_SCORE: nonNegative(100),
  ANOMALY_DETECT_AT: nonNegative(50),
  ANOMALY_FREQUENCY_FLAG_RATIO: nonNegative(3),
  ANOMALY_VALUE_FLAG_RATIO: nonNegative(5),
  ANOMALY_FAILURE_FLAG_RATE: nonNegative(0.2),
};

/** Settings every process shares (DESIGN §5). */
export const sharedEnv = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: optionalString,
  DATA_DIR: z.string().default('./.data'),
  REDIS_URL: optionalString,
  DB_POOL_MAX: positiveInt(10),
  DB_CONNECTION_TIMEOUT_MS: positiveInt(1000),
  /** `off` for poolers that cannot carry named prepared statements (PgBouncer in transaction mode before 1.21). */
  DB_PREPARED_STATEMENTS: z
    .enum(['on', 'off'])
    .default('on')
    .transform((v) => v === 'on'),
  MIGRATE_ON_START: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  ...checksEnv,
};

export { disablePretenuring } from './pretenuring.ts';
export { optionalString, positiveInt };

type ChecksConfig = { [K in keyof typeof checksEnv]: z.output<(typeof checksEnv)[K]> };

/** The checks' settings in the shape the core services take. */
export function checksOptions(config: ChecksConfig) {
  return {
    chainRpcUrl: config.CHAIN_RPC_URL,
    verification: {
      minAgeDays: config.VERIFY_MIN_AGE_DAYS,
      minTransactions: config.VERIFY_MIN_TRANSACTIONS,
      activityWindowDays: config.VERIFY_ACTIVITY_WINDOW_DAYS,
      ownerStableDays: config.VERIFY_OWNER_STABLE_DAYS,
      minScore: config.VERIFY_MIN_SCORE,
    },
    anomaly: {
      detectAt: config.ANOMALY_DETECT_AT,
      frequencyFlagRatio: config.ANOMALY_FREQUENCY_FLAG_RATIO,
      valueFlagRatio: config.ANOMALY_VALUE_FLAG_RATIO,
      failureFlagRate: config.ANOMALY_FAILURE_FLAG_RATE,
    },
  };
}

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

type DatabaseConfig = {
  DATABASE_URL: string | undefined;
  DATA_DIR: string;
  DB_POOL_MAX: number;
  DB_CONNECTION_TIMEOUT_MS: number;
  DB_PREPARED_STATEMENTS: boolean;
};

/** The database settings in the shape `createDatabase` takes. */
export function databaseOptions(config: DatabaseConfig, applicationName: string) {
  return {
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolMax: config.DB_POOL_MAX,
    connectionTimeoutMs: config.DB_CONNECTION_TIMEOUT_MS,
    preparedStatements: config.DB_PREPARED_STATEMENTS,
    applicationName,
  };
}
