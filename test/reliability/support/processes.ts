import { freePort, type Spawned, spawnBuilt, waitForHttp } from '../../support/process.ts';

export type { Spawned };

/** True while the process runs (it has neither exited nor been killed). */
export function alive(spawned: Spawned): boolean {
  return spawned.child.exitCode === null && spawned.child.signalCode === null;
}

/** Waits until the process's output matches `pattern`; fails if it exits first. */
export async function waitForOutput(spawned: Spawned, pattern: string | RegExp, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const matches = () =>
    typeof pattern === 'string' ? spawned.output().includes(pattern) : pattern.test(spawned.output());
  while (!matches()) {
    if (!alive(spawned)) throw new Error(`process exited before saying ${pattern}:\n${tail(spawned)}`);
    if (Date.now() > deadline)
      throw new Error(`process did not say ${pattern} within ${timeoutMs} ms:\n${tail(spawned)}`);
    await sleep(50);
  }
}

/** The last lines of a process's output, for failure messages. */
export function tail(spawned: Spawned, lines = 40): string {
  return spawned.output().split('\n').slice(-lines).join('\n');
}

/** The JSON log lines of a process (pino), skipping anything else it printed. */
export function logLines(spawned: Spawned): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of spawned.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a partial line at the end of the buffer
    }
  }
  return out;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

/** SIGKILLs a process if it still runs and waits for it to be gone. */
export async function kill(spawned: Spawned | undefined): Promise<void> {
  if (!spawned) return;
  if (alive(spawned)) spawned.child.kill('SIGKILL');
  await spawned.exited;
}

/** Polls `probe` every `everyMs` until it returns true; resolves with the time it took, or throws. */
export async function until(probe: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}
