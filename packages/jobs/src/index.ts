export { blockingConnection, createBullmqRunner, jobOptions, redisOptionsFromUrl } from './bullmq.ts';
export * from './errors.ts';
export { createInProcessRunner } from './in-process.ts';
export type { JobContext, Processor, Processors } from './processor.ts';
export * from './registry.ts';
export type * from './runner.ts';
