import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleArgs, ensureBuilt } from '../../scripts/build.ts';

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

/**
 * Starts an app the way `npm start` / `npm run start:worker` do: bundled by
 * scripts/build.ts (once per test process) and run with plain node.
 */
export async function spawnBuilt(app: 'api' | 'worker', env: Record<string, string>): Promise<Spawned> {
  await ensureBuilt();
  return spawnCommand(process.execPath, bundleArgs(app), {
    ...process.env,
    LOG_LEVEL: 'info',
    ...env,
  });
}

export interface EmbeddedApi {
  server: Spawned;
  base: string;
  /** SIGKILLs the process (if it still runs) and removes its data directory. */
  remove(): void;
}

/**
 * The API bundle on the embedded database (PGlite) in a fresh temporary directory, on a
 * free port, started with `env` and answering `readyPath`.
 */
export async function startEmbeddedApi(env: Record<string, string>, readyPath = '/health'): Promise<EmbeddedApi> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vouch-api-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await spawnBuilt('api', { PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: '', ...env });
  const remove = () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitForHttp(`${base}${readyPath}`, server);
  } catch (error) {
    remove();
    throw error;
  }
  return { server, base, remove };
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
