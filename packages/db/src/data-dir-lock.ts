import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import lockfile from 'proper-lockfile';

/** Who holds a data directory, written beside the lock so that a refused process can name it. */
export interface DataDirHolder {
  pid: number;
  host: string;
  role: string;
  since: string;
}

/** Another live process holds the embedded database's directory. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: DataDirHolder | null,
  ) {
    const who = holder
      ? `process ${holder.pid} on ${holder.host} (${holder.role}, since ${holder.since})`
      : 'another process';
    super(
      `DATA_DIR ${dir} is in use by ${who}: two processes on one embedded database would overwrite each other's data; stop that process, or give this one another DATA_DIR (or a DATABASE_URL)`,
    );
    this.name = 'DataDirLockedError';
  }
}

// The lock's mtime is refreshed every UPDATE_MS; a lock not refreshed for STALE_MS belongs to a
// dead process (a busy event loop that misses a refresh keeps its lock: proper-lockfile ≥ 4).
const STALE_MS = 30_000;
const UPDATE_MS = 5_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Directories this process holds: a holder naming this pid is this process only for these. */
const held = new Set<string>();

function readHolder(path: string): DataDirHolder | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as DataDirHolder;
  } catch {
    return null;
  }
}

/**
 * Takes the embedded database's directory for this process alone (PGlite has no locking of
 * its own: two processes on one directory both start, diverge, and lose acknowledged writes).
 * A lock left by a process that died on this host is taken over at once (also when this process
 * got its pid); one held by a live process, or by another host, is refused with a message naming
 * the holder.
 */
export async function lockDataDir(
  dir: string,
  role: string,
  onCompromised: (error: Error) => void = () => {},
): Promise<{ release(): Promise<void> }> {
  const absolute = resolve(dir);
  mkdirSync(absolute, { recursive: true });
  const lockPath = join(absolute, 'vouch.lock');
  const holderPath = join(absolute, 'vouch.lock.holder.json');
  const options = { lockfilePath: lockPath, stale: STALE_MS, update: UPDATE_MS, realpath: false, onCompromised };

  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(absolute, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    const holder = readHolder(holderPath);
    // A holder with this process's pid that this process does not hold is a dead one's whose pid
    // came back: a container restarted after a crash numbers its processes the same, and was
    // refused, naming itself, until the lock went stale (30 s).
    const itsOwnPid = holder?.pid === process.pid && !held.has(absolute);
    if (!holder || holder.host !== hostname() || (alive(holder.pid) && !itsOwnPid)) {
      throw new DataDirLockedError(dir, holder);
    }
    // Left by a process of this host that is gone: the directory is free.
    rmSync(lockPath, { recursive: true, force: true });
    try {
      release = await lockfile.lock(absolute, options);
    } catch {
      throw new DataDirLockedError(dir, readHolder(holderPath));
    }
  }
  const holder: DataDirHolder = { pid: process.pid, host: hostname(), role, since: new Date().toISOString() };
  writeFileSync(holderPath, `${JSON.stringify(holder)}\n`);
  held.add(absolute);
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      held.delete(absolute);
      rmSync(holderPath, { force: true });
      await release().catch(() => {});
    },
  };
}
