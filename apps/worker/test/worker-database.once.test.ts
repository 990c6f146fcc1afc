import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBullmqRunner, jobs } from '@vouch/jobs';
import { ConfigError, createRuntime, loadConfig, type Runtime } from '@vouch/runtime';
import { dropPrefix, redisAvailable, sleep, TEST_REDIS_URL, testPrefix, until } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

// A worker without DATABASE_URL opened an embedded database of its own, which no process
// migrates, and took the deployment's jobs from Redis all the same: each failed on a missing
// table ("relation … does not exist") after its attempts, where a worker on the deployment's
// database would have run it.
describe.runIf(await redisAvailable())('a worker process without DATABASE_URL', () => {
  it('is refused at start, naming the variable, and takes no job', async () => {
    const prefix = testPrefix();
    const dataDir = mkdtempSync(join(tmpdir(), 'vouch-worker-'));
    const producer = createBullmqRunner({ redisUrl: TEST_REDIS_URL, prefix, waitMs: 1000, awaitResults: false });
    let worker: Runtime | undefined;
    try {
      let jobId = '';
      await until(async () => {
        jobId = (await producer.enqueue(jobs.purgeIdempotency, {}).catch(() => ({ jobId: '' }))).jobId;
        return jobId !== '';
      }, 10_000);
      const config = loadConfig({
        REDIS_URL: TEST_REDIS_URL,
        BULLMQ_PREFIX: prefix,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
      });
      const started = createRuntime(config, { role: 'worker' }).then((runtime) => {
        worker = runtime;
        return runtime;
      });
      await expect(started).rejects.toThrow(ConfigError);
      await expect(started).rejects.toThrow(/^invalid configuration: DATABASE_URL: required by a worker process/);
      // The job waits for a worker on the deployment's database.
      await sleep(1000);
      expect((await producer.get(jobId))?.status).toBe('waiting');
    } finally {
      await worker?.close();
      await producer.close();
      await dropPrefix(prefix);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
