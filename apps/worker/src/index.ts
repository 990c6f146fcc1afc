export { loadWorkerConfig, resolveQueues } from './config.ts';
export { createProcessors } from './processors/index.ts';
export { startWorkers, verifyProcessors, type WorkerManager } from './worker-manager.ts';
