import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** Commands run from the repository root, as the npm scripts do. */
const REPO_ROOT = new URL('../../../', import.meta.url).pathname;

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
  /** What the process printed (stdout and stderr together). */
  output: () => string;
  /** Resolves with the exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  /** Keep only the last this many characters of output: a benchmark's processes run for minutes. */
  keepOutput?: number;
  /** Also receives every chunk of output (a log file, say). */
  onOutput?: (chunk: Buffer) => void;
}

/** Starts a command from the repo root, collecting its output. */
export function spawnCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: SpawnOptions = {},
): Spawned {
  const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const { keepOutput, onOutput } = options;
  let output = '';
  const collect = (chunk: Buffer) => {
    onOutput?.(chunk);
    output += chunk;
    if (keepOutput !== undefined && output.length > keepOutput) output = output.slice(-keepOutput);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** True while the process runs (it has neither exited nor been killed). */
export function alive(spawned: Spawned): boolean {
  return spawned.child.exitCode === null && spawned.child.signalCode === null;
}

/** SIGKILLs a process if it still runs and waits for it to be gone. */
export async function kill(spawned: Spawned | undefined): Promise<void> {
  if (!spawned) return;
  if (alive(spawned)) spawned.child.kill('SIGKILL');
  await spawned.exited;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `url` until it answers (any HTTP status) or the deadline passes; fails early if the process ends. */
export async function waitForHttp(url: string, spawned: Spawned, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(spawned)) throw new Error(`process exited before answering ${url}:\n${spawned.output()}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer(); // read to the end, so the connection is released
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms:\n${spawned.output()}`);
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

/** Polls `probe` every `everyMs` until it returns true; resolves with the time it took, or throws. */
export async function until(probe: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/**
 * A promise opened from outside: `await opened` waits until `open()` is called. What a test of two
 * things at once uses to hold one of them at a chosen point.
 */
export function latch(): { opened: Promise<void>; open(): void } {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}
