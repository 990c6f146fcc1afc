import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleArgs, ensureBuilt } from '../../scripts/build.ts';
import { onCleanup, trackPid, untrackPid } from './cleanup.ts';

export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/** Only these variables of the harness's own environment reach the children; the rest is set explicitly. */
const PASSED_ENV = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'];

export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of PASSED_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

export interface Child {
  name: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  /** The last few KB of its output. */
  tail(): string;
  /** Resolves with the exit code (or signal). */
  exited: Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts a TypeScript entry point (`node --import tsx <entry>`) with exactly `env` (plus PATH and friends). */
export function spawnTs(name: string, entry: string, env: Record<string, string>, logDir: string): Child {
  return spawnNode(name, ['--import', 'tsx', entry], env, logDir);
}

/** Starts an app as `npm start` / `npm run start:worker` run it: bundled (scripts/build.ts, once), plain node. */
export async function spawnApp(
  name: string,
  app: 'api' | 'worker',
  env: Record<string, string>,
  logDir: string,
): Promise<Child> {
  await ensureBuilt();
  return spawnNode(name, bundleArgs(app), env, logDir);
}

/** Starts a JavaScript file with plain node: `node <file> ...args`. */
export function spawnJs(name: string, fileAndArgs: string[], env: Record<string, string>, logDir: string): Child {
  return spawnNode(name, fileAndArgs, env, logDir);
}

function spawnNode(name: string, args: string[], env: Record<string, string>, logDir: string): Child {
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (!child.pid) throw new Error(`could not start ${name} (${args.join(' ')})`);
  const pid = child.pid;
  trackPid(pid);
  const logFile = join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  let tail = '';
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      untrackPid(pid);
      log.end();
      resolve(signal ?? String(code));
    }),
  );
  const stop = async (graceMs = 10_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const undo = onCleanup(`stop ${name}`, () => stop(5000));
  void exited.then(undo);
  return { name, pid, child, logFile, tail: () => tail, exited, stop };
}

// One free-port finder for tests and benchmarks.
export { freePort } from '../../test/support/process.ts';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `url` until it answers 200, failing early if the process exits. */
export async function waitForHttp(url: string, proc: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited before answering ${url}; its output:\n${proc.tail()}`);
    }
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${proc.name} did not answer ${url} within ${timeoutMs} ms; its output:\n${proc.tail()}`);
}

/** Resident set size and its high-water mark (VmHWM) of a process, in bytes (Linux /proc). */
export function memoryOf(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return null;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; returns the peak seen and the kernel's high-water mark. */
export function sampleRss(pid: number, everyMs = 100) {
  let peak = 0;
  let samples = 0;
  const take = () => {
    const m = memoryOf(pid);
    if (m && Number.isFinite(m.rss)) {
      peak = Math.max(peak, m.rss);
      samples++;
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      const end = memoryOf(pid);
      return { peakRssBytes: peak, samples, endRssBytes: end?.rss ?? null, vmHwmBytes: end?.hwm ?? null };
    },
  };
}
