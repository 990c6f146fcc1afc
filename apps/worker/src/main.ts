import { disablePretenuring } from '@vouch/config';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';

/** config → runtime with the BullMQ workers of WORKER_QUEUES; a stop lets active jobs finish. */
async function start() {
  const config = loadConfig();
  disablePretenuring();
  const runtime = await createRuntime(config, { role: 'worker' });
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    runtime.logger.info({ signal }, 'shutting down: finishing active jobs');
    await runtime.close();
    runtime.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

await start().catch((error: unknown) => exitOnStartupFailure(error, 'vouch-worker'));
