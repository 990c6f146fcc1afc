import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { buildAll } from '../../scripts/build.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

let built: Promise<void> | undefined;

/**
 * Starts an app the way `npm start` / `npm run start:worker` do: bundled by
 * scripts/build.ts (once per test process) and run with plain node.
 */
export async function spawnBuilt(app: 'api' | 'worker', env: Record<string, string>): Promise<Spawned> {
  built ??= buildAll();
  await built;
  return spawnCommand(process.execPath, ['--enable-source-maps', `apps/${app}/dist/main.js`], {
    ...process.env,
    LOG_LEVEL: 'info',
    ...env,
  });
}

/** Starts a command from the repo root, collecting its output. */
export function spawnCommand(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Spawned {
  const child = spawn(command, args, {
    cwd: new URL('../../', import.meta.url).pathname,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Polls `url` until it answers (any HTTP status) or the deadline passes. */
export async function waitForHttp(url: string, spawned: Spawned, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (spawned.child.exitCode !== null) throw new Error(`process exited early:\n${spawned.output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms:\n${spawned.output()}`);
}
