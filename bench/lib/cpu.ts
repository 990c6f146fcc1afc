import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const cpus = availableParallelism();

/** Clock ticks per second of /proc times (USER_HZ; 100 on every mainstream Linux). */
const HZ = 100;

interface ProcTimes {
  comm: string;
  ticks: number;
}

interface Snapshot {
  at: number;
  /** Busy and total jiffies over all CPUs (/proc/stat). */
  busy: number;
  total: number;
  procs: Map<number, ProcTimes>;
}

function readProcs(): Map<number, ProcTimes> {
  const procs = new Map<number, ProcTimes>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return procs;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      procs.set(Number(entry), { comm, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the process ended meanwhile
    }
  }
  return procs;
}

function snapshot(): Snapshot {
  let busy = 0;
  let total = 0;
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    total = values.reduce((a, b) => a + b, 0);
    // idle + iowait
    busy = total - (values[3] ?? 0) - (values[4] ?? 0);
  } catch {
    // not Linux: figures stay empty
  }
  return { at: performance.now(), busy, total, procs: readProcs() };
}

/** CPU used during an interval, in cores (1.0 = one core fully busy), by group of processes. */
export type CpuUsage = Record<string, number>;

/**
 * Measures who used the CPU between start() and stop(): the named groups of pids,
 * every `postgres` and `redis-server` process, the harness itself, and the rest of
 * the machine (`other`, which should stay near 0 on an otherwise idle machine).
 */
export function cpuMeter(groups: () => Record<string, number[]>) {
  const before = snapshot();
  return {
    stop(): CpuUsage {
      const after = snapshot();
      const seconds = (after.at - before.at) / 1000;
      // A pid keeps its times across exec (its comm may change); a smaller count means a reused pid.
      const delta = (pid: number) => {
        const a = after.procs.get(pid);
        if (!a) return 0;
        const b = before.procs.get(pid);
        return b && b.ticks <= a.ticks ? a.ticks - b.ticks : a.ticks;
      };
      const usage: CpuUsage = {};
      const claimed = new Set<number>();
      const named = { ...groups(), harness: [process.pid] };
      for (const [group, pids] of Object.entries(named)) {
        let ticks = 0;
        for (const pid of pids) {
          if (claimed.has(pid)) continue;
          claimed.add(pid);
          ticks += delta(pid);
        }
        usage[group] = ticks;
      }
      let postgres = 0;
      let redis = 0;
      let all = 0;
      for (const [pid, p] of after.procs) {
        const d = delta(pid);
        all += d;
        if (claimed.has(pid)) continue;
        if (p.comm === 'postgres') postgres += d;
        else if (p.comm.startsWith('redis-server')) redis += d;
      }
      usage.postgres = postgres;
      usage.redis = redis;
      const known = Object.values(usage).reduce((a, b) => a + b, 0);
      usage.other = Math.max(0, all - known);
      const result: CpuUsage = {};
      for (const [group, ticks] of Object.entries(usage)) {
        result[group] = seconds > 0 ? Math.round((ticks / HZ / seconds) * 100) / 100 : 0;
      }
      // Every CPU's busy time, in cores, for comparison with the sum of the groups.
      const totalSpan = after.total - before.total;
      result.machine = totalSpan > 0 ? Math.round(((after.busy - before.busy) / totalSpan) * cpus * 100) / 100 : 0;
      return result;
    },
  };
}
