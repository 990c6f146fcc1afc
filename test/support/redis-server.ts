import { Redis } from 'ioredis';
import { freePort, spawnCommand } from './process.ts';

export interface DisposableRedis {
  url: string;
  port: number;
  /** SIGKILLs the server and waits for it to be gone. */
  kill(): Promise<void>;
}

/**
 * A redis-server of the test's own on a free port, with no persistence, so a test
 * can stop it without disturbing the shared Redis other tests use.
 */
export async function startRedisServer(): Promise<DisposableRedis> {
  const port = await freePort();
  const server = spawnCommand('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no']);
  const { child, exited } = server;
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited early:\n${server.output()}`);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {}); // a refused connection while the server starts; retried below
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`redis-server on ${port} did not answer: ${error}\n${server.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      client.disconnect();
    }
  }
  return {
    url,
    port,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
