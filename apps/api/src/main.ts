import { createServices } from '@vouch/core';
import { createDatabase, migrateToLatest } from '@vouch/db';
import pino from 'pino';
import { buildApp } from './app.ts';
import { loadApiConfig } from './config.ts';

const config = loadApiConfig();
const logger = pino({
  level: config.LOG_LEVEL,
  redact: ['req.headers.authorization', 'req.headers.cookie'],
});

const database = createDatabase({
  databaseUrl: config.DATABASE_URL,
  dataDir: config.DATA_DIR,
  poolMax: config.DB_POOL_MAX,
  connectionTimeoutMs: config.DB_CONNECTION_TIMEOUT_MS,
  applicationName: 'vouch-api',
  onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
});
logger.info(
  { driver: database.driver, dataDir: database.driver === 'pglite' ? config.DATA_DIR : undefined },
  'database configured',
);
if (config.MIGRATE_ON_START || database.driver === 'pglite') await migrateToLatest(database.db);

const services = createServices({ db: database.db });
const app = await buildApp({
  services,
  logger,
  trustProxy: config.TRUST_PROXY,
  bodyLimit: config.BODY_LIMIT_BYTES,
});

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  logger.info({ signal }, 'shutting down');
  const deadline = setTimeout(() => {
    logger.error('shutdown deadline passed; exiting');
    process.exit(1);
  }, config.SHUTDOWN_TIMEOUT_MS);
  deadline.unref();
  try {
    await app.close(); // stop accepting, finish in-flight requests
    await database.close();
    process.exit(0);
  } catch (err) {
    logger.error({ err }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

await app.listen({ port: config.PORT, host: config.HOST });
