import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { alive, freePort, type Spawned, sleep, spawnCommand } from './process.ts';

/** Waits until a redis-server answers PING (with AOF, only once its data is loaded); fails if it exits first. */
async function waitForPing(server: Spawned, url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!alive(server)) throw new Error(`redis-server exited early:\n${server.output()}`);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {}); // a refused connection while the server starts; retried below
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`redis-server at ${url} did not answer: ${error}\n${server.output()}`);
      await sleep(50);
    } finally {
      client.disconnect();
    }
  }
}

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
  const url = `redis://127.0.0.1:${port}`;
  await waitForPing(server, url);
  return {
    url,
    port,
    kill: async () => {
      if (alive(server)) server.child.kill('SIGKILL');
      await server.exited;
    },
  };
}

export interface PersistentRedis {
  url: string;
  port: number;
  /** Stops the server (SIGTERM: it flushes its AOF and exits) and waits for it to be gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port with the same data directory. */
  start(): Promise<void>;
  /** A short-lived client for commands the test sends (CLIENT KILL, KEYS, …). */
  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T>;
  running(): boolean;
  output(): string;
  destroy(): Promise<void>;
}

/**
 * A redis-server of the test's own with AOF persistence (`appendfsync always`, so every
 * acknowledged write is on disk), on a free port and in a temporary directory. A test can
 * stop it and start it again with its data, as an operator's restart would.
 */
export async function startPersistentRedis(): Promise<PersistentRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vouch-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let server: Spawned | undefined;
  // The output of the runs before the current one.
  let earlier = '';

  async function start() {
    if (server) earlier += server.output();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes'];
    server = spawnCommand('redis-server', [...args, '--appendfsync', 'always', '--save', '']);
    await waitForPing(server, url);
  }

  function running() {
    return server !== undefined && alive(server);
  }

  async function stop(signal: NodeJS.Signals = 'SIGTERM') {
    if (running()) server?.child.kill(signal);
    await server?.exited;
  }

  await start();
  return {
    url,
    port,
    stop,
    start,
    running,
    output: () => earlier + (server?.output() ?? ''),
    async command<T>(name: string, ...args: Array<string | number>) {
      const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
      client.on('error', () => {});
      try {
        return (await client.call(name, ...args)) as T;
      } finally {
        client.disconnect();
      }
    },
    async destroy() {
      await stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
