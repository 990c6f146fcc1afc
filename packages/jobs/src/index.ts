export { blockingConnection, createBullmqRunner, jobOptions, redisOptionsFromUrl } from './bullmq.ts';
export { type BullmqWorkers, startBullmqWorkers } from './bullmq-worker.ts';
export * from './errors.ts';
export * from './executor.ts';
export { createInProcessRunner } from './in-process.ts';
export type { JobContext, Processor, Processors } from './processor.ts';
export * from './registry.ts';
export type * from './runner.ts';
