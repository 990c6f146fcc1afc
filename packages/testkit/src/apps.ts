import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The build script stays the one place that knows how the bundles are made and run.
import { bundleArgs, ensureBuilt } from '../../../scripts/build.ts';
import {
  alive,
  freePort,
  type Spawned,
  type SpawnOptions,
  spawnCommand,
  waitForHttp,
  waitForOutput,
} from './process.ts';

export { bundleArgs, ensureBuilt };

/**
 * Starts an app the way `npm start` / `npm run start:worker` do: bundled by
 * scripts/build.ts (once per process) and run with plain node.
 */
export async function spawnBuilt(
  app: 'api' | 'worker',
  env: Record<string, string>,
  options: SpawnOptions = {},
): Promise<Spawned> {
  await ensureBuilt();
  return spawnCommand(
    process.execPath,
    bundleArgs(app),
    {
      ...process.env,
      LOG_LEVEL: 'info',
      ...env,
    },
    options,
  );
}

export interface ApiProcess {
  spawned: Spawned;
  base: string;
  port: number;
}

/** Starts the API (apps/api/src/main.ts, bundled as `npm start` runs it) as a real process and waits until it answers HTTP. */
export async function startApi(env: Record<string, string>): Promise<ApiProcess> {
  const port = await freePort();
  const spawned = await spawnBuilt('api', {
    PORT: String(port),
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'info',
    ...env,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/health`, spawned, 90_000);
  return { spawned, base, port };
}

/** Starts a queue worker (bundled, as `npm run start:worker` runs it) and waits until its workers run. */
export async function startWorker(env: Record<string, string>): Promise<Spawned> {
  const spawned = await spawnBuilt('worker', { LOG_LEVEL: 'debug', ...env });
  await waitForOutput(spawned, 'workers started', 90_000);
  return spawned;
}

export interface EmbeddedApi {
  server: Spawned;
  base: string;
  dataDir: string;
  /** SIGKILLs the process (if it still runs) and removes its data directory. */
  remove(): void;
}

/**
 * The API bundle on the embedded database (PGlite) in a fresh temporary directory, on a
 * free port, started with `env` and answering `readyPath`.
 */
export async function startEmbeddedApi(
  env: Record<string, string>,
  readyPath = '/health',
  options: SpawnOptions = {},
): Promise<EmbeddedApi> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vouch-api-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await spawnBuilt('api', { PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: '', ...env }, options);
  const remove = () => {
    if (alive(server)) server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitForHttp(`${base}${readyPath}`, server);
  } catch (error) {
    remove();
    throw error;
  }
  return { server, base, dataDir, remove };
}
