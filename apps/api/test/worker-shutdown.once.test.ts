import { createServer } from 'node:http';
import { systemActor } from '@vouch/core';
import {
  createTestDatabase,
  createTestRuntime,
  type Spawned,
  spawnBuilt,
  startRedisServer,
  until,
} from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

// A worker process stopped while one of its jobs hangs — a webhook delivery to a receiver that
// takes the request and never answers, well within WEBHOOK_TIMEOUT_MS — gives the job
// SHUTDOWN_TIMEOUT_MS, then cuts its connections and exits, instead of waiting for the job.
describe('a worker stopped while a job hangs', () => {
  it('exits within SHUTDOWN_TIMEOUT_MS and a second, saying it did not wait for the job', async () => {
    const redis = await startRedisServer();
    const database = await createTestDatabase();
    let received = 0;
    const hung = createServer(() => {
      received++; // and never an answer
    });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hung.address() as { port: number }).port}/hook`;
    const env = {
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: 'vouch-stop',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on',
      WEBHOOK_TIMEOUT_MS: '60000',
    };
    const producer = await createTestRuntime(database, { role: 'api', env });
    let worker: Spawned | undefined;
    try {
      const started = await spawnBuilt('worker', {
        ...env,
        DATABASE_URL: database.url as string,
        SHUTDOWN_TIMEOUT_MS: '1000',
      });
      worker = started;
      await until(async () => started.output().includes('workers started'), 30_000);
      const hook = await producer.services.webhooks.create(systemActor(), { url, eventTypes: ['webhook.disabled'] });
      await producer.services.webhooks.test(systemActor(), hook.id);
      await until(async () => received > 0, 30_000);

      const signalled = performance.now();
      started.child.kill('SIGTERM');
      const code = await started.exited;
      const took = performance.now() - signalled;
      expect(took).toBeLessThan(1000 + 1000);
      expect(code).toBe(0);
      expect(started.output()).toContain('workers did not finish before the deadline; disconnecting');
      expect(started.output()).toContain('"msg":"stopped"');
    } finally {
      if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
      await producer.close();
      await database.close();
      await redis.kill();
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  }, 90_000);
});
