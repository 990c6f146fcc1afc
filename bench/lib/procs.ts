import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, bundleArgs, ensureBuilt, type Spawned, spawnCommand } from '@vouch/testkit';
import { onCleanup, trackPid, untrackPid } from './cleanup.ts';

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

/** A process of the run; `output()` is the last few KB of what it printed, the whole of it is in `logFile`. */
export interface Child extends Spawned {
  name: string;
  pid: number;
  logFile: string;
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
  const logFile = join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  const spawned = spawnCommand(
    process.execPath,
    args,
    { ...baseEnv(), ...env },
    { keepOutput: 4000, onOutput: (chunk) => log.write(chunk) },
  );
  const { child } = spawned;
  if (!child.pid) throw new Error(`could not start ${name} (${args.join(' ')})`);
  const pid = child.pid;
  trackPid(pid);
  const stop = async (graceMs = 10_000) => {
    if (!alive(spawned)) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await spawned.exited;
    clearTimeout(timer);
  };
  const undo = onCleanup(`stop ${name}`, () => stop(5000));
  void spawned.exited.then(() => {
    untrackPid(pid);
    log.end();
    undo();
  });
  return { ...spawned, name, pid, logFile, stop };
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
