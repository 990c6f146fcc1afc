import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../support/process.ts';

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
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';

  async function start() {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const current = child;
    current.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    current.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (current.exitCode !== null) throw new Error(`redis-server exited early:\n${output}`);
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => {}); // refused while the server starts; retried below
      try {
        await client.connect();
        // Answers PING only once the AOF is loaded.
        await client.ping();
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer: ${error}\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        client.disconnect();
      }
    }
  }

  function running() {
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async function stop(signal: NodeJS.Signals = 'SIGTERM') {
    if (running()) child?.kill(signal);
    await exited;
  }

  await start();
  return {
    url,
    port,
    stop,
    start,
    running,
    output: () => output,
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
