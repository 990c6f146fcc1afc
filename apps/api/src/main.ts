import { authMode, disablePretenuring } from '@vouch/config';
import { createRuntime, exitOnStartupFailure, loadConfig, stopOnSignals } from '@vouch/runtime';
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
        'AUTH is off: every API route but keys, organizations and audit (which need ADMIN_API_KEY) is open to anyone who can reach this port (set AUTH=on and ADMIN_API_KEY to require API keys)',
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

await start().catch((error: unknown) => exitOnStartupFailure(error, 'vouch-api'));
