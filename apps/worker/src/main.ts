import { disablePretenuring } from '@vouch/config';
import { createRuntime, exitOnStartupFailure, loadConfig, stopOnSignals } from '@vouch/runtime';

/** config → runtime with the BullMQ workers of WORKER_QUEUES; a stop lets active jobs finish. */
async function start() {
  const config = loadConfig();
  disablePretenuring();
  const runtime = await createRuntime(config, { role: 'worker' });
  stopOnSignals(runtime);
}

await start().catch((error: unknown) => exitOnStartupFailure(error, 'vouch-worker'));
