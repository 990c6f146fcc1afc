import { createServer, type Server, Socket } from 'node:net';
import { createBullmqRunner, jobs } from '@vouch/jobs';
import { dropPrefix, freePort, redisAvailable, redisVersion, TEST_REDIS_URL, testPrefix, until } from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const hasRedis = await redisAvailable();

/**
 * A TCP proxy to Redis that cuts its first connection as soon as Redis has answered the
 * client's ready check (the first INFO): the client is then ready, and its connection is gone
 * before anything it sends next can be answered. Later connections pass untouched.
 */
async function cutAfterReadyCheck(redisUrl: string): Promise<{ url: string; cuts: () => number; close(): void }> {
  const target = new URL(redisUrl);
  const port = await freePort();
  let connections = 0;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const first = connections++ === 0;
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    upstream.connect(Number(target.port), target.hostname);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      client.write(chunk);
      if (first && chunk.toString('latin1').includes('redis_version:')) {
        cuts++;
        client.destroy();
        upstream.destroy();
      }
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${port}`,
    cuts: () => cuts,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe.runIf(hasRedis)('the BullMQ producer when Redis goes away while it starts', () => {
  const prefix = testPrefix();
  afterAll(() => dropPrefix(prefix));

  it('queues jobs once Redis answers again, although its connection dropped just after it was ready', async () => {
    const proxy = await cutAfterReadyCheck(TEST_REDIS_URL);
    const runner = createBullmqRunner({ redisUrl: proxy.url, prefix, waitMs: 1000, awaitResults: false });
    try {
      await until(async () => proxy.cuts() === 1, 10_000);
      // The producer reconnects (at most 2 s apart); from then on a job must be queued. Queues
      // whose start had failed on the dropped connection refused every job for good.
      let queued: { jobId: string } | null = null;
      await until(async () => {
        queued = await runner.enqueue(jobs.purgeIdempotency, {}).catch(() => null);
        return queued !== null;
      }, 15_000);
      expect(queued).toMatchObject({ jobId: expect.stringMatching(/^maintenance-/) });
      expect(proxy.cuts()).toBe(1);
      // Without its own version question the queue still knows the server's, which picks BullMQ's scripts.
      expect(runner.queues.get('maintenance')?.redisVersion).toBe(await redisVersion(TEST_REDIS_URL, 2000));
    } finally {
      await runner.close();
      proxy.close();
    }
  }, 30_000);
});
