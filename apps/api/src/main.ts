import { authMode, disablePretenuring } from '@vouch/config';
import { createRuntime, exitOnStartupFailure, loadConfig, type Runtime } from '@vouch/runtime';
import { appDeps, buildApp } from './app.ts';

/** config → runtime (database, jobs, services, workers) → app → listen; a stop closes them in reverse. */
async function start() {
  const config = loadConfig();
  disablePretenuring();
  const runtime = await createRuntime(config);
  const { logger } = runtime;
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    if (authMode(config) === 'off') {
      logger.warn(
        'AUTH is off: every API route is open to anyone who can reach this port (set AUTH=on and ADMIN_API_KEY to require API keys)',
      );
    }
    const deps = appDeps(runtime);
    logger.info(
      { auth: deps.auth?.mode, rateLimit: deps.rateLimit ? (config.REDIS_URL ? 'redis' : 'memory') : 'off' },
      'edge configured',
    );
    app = await buildApp(deps);
    await app.listen({ port: config.PORT, host: config.HOST });
  } catch (error) {
    await app?.close().catch(() => {});
    await runtime.close().catch(() => {});
    throw error;
  }
  stopOnSignals(runtime, app);
}

function stopOnSignals(runtime: Runtime, app: { close(): Promise<unknown> }) {
  const { logger, config } = runtime;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 1000);
    deadline.unref();
    try {
      await app.close(); // stop accepting, finish in-flight requests
      await runtime.close();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

await start().catch((error: unknown) => exitOnStartupFailure(error, 'vouch-api'));
