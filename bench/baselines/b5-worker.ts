/**
 * B5's consumer: a BullMQ Worker whose processor does nothing, in its own process
 * (as the real workers are). REDIS_URL, BULLMQ_PREFIX, B5_QUEUE from the environment.
 */
import { blockingConnection } from '@vouch/jobs';
import { Worker } from 'bullmq';
import { envVar } from '../lib/env.ts';

const redisUrl = envVar('REDIS_URL') ?? 'redis://127.0.0.1:6379';
const worker = new Worker(envVar('B5_QUEUE') ?? 'b5', async () => ({ ok: true }), {
  connection: blockingConnection(redisUrl),
  prefix: envVar('BULLMQ_PREFIX') ?? 'vouch-bench',
  concurrency: Number(envVar('WORKER_CONCURRENCY') ?? 4),
});
worker.on('error', (err) => console.error('b5 worker error', err));
await worker.waitUntilReady();
console.log('b5 worker ready');

const stop = () => void worker.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
