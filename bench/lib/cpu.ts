import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const cpus = availableParallelism();

/** Clock ticks per second of /proc times (USER_HZ; 100 on every mainstream Linux). */
const HZ = 100;

interface ProcTimes {
  comm: string;
  ppid: number;
  ticks: number;
  /** Nanoseconds its main thread spent runnable but waiting for a CPU (/proc/<pid>/schedstat). */
  waitNs: number;
}

/** The PostgreSQL server and database of this run: only their processes count as `postgres`. */
let ownPostgres: { postmasterPid: number; database: string } | null = null;

/** Given the pid of one of this run's backends (SELECT pg_backend_pid()), finds its postmaster. */
export function setOwnPostgres(backendPid: number, database: string): void {
  try {
    const stat = readFileSync(`/proc/${backendPid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    ownPostgres = { postmasterPid: ppid, database };
  } catch {
    ownPostgres = null; // PostgreSQL runs elsewhere (another host or container): no attribution
  }
}

/**
 * Whether a `postgres` process serves this run: the server's own background processes,
 * and backends of this run's database (the process title names it). Backends of other
 * databases, and other servers, belong to `other`. Without attribution, every one counts.
 */
function isOwnPostgres(pid: number, p: ProcTimes): boolean {
  if (!ownPostgres) return true;
  if (pid === ownPostgres.postmasterPid) return true;
  if (p.ppid !== ownPostgres.postmasterPid) return false;
  let title = '';
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return true;
  }
  // "postgres: 15/main: <user> <database> <host>(<port>) <activity>" or "… autovacuum worker <database>"
  const autovacuum = /autovacuum worker (\S+)/.exec(title);
  if (autovacuum) return autovacuum[1] === ownPostgres.database;
  const backend = /^postgres: (?:[^:\s]+: )?(\S+) (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title);
  if (backend) return backend[2] === ownPostgres.database;
  return true;
}

interface Snapshot {
  at: number;
  /** Busy and total jiffies over all CPUs (/proc/stat). */
  busy: number;
  total: number;
  /** user + nice + system jiffies: what processes were charged (live or since exited). */
  processTime: number;
  /** irq + softirq jiffies (loopback networking lands here). */
  irq: number;
  /** Jiffies the hypervisor gave to other guests while this one wanted the CPU. */
  steal: number;
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
      let waitNs = 0;
      try {
        waitNs = Number(readFileSync(`/proc/${entry}/schedstat`, 'utf8').split(' ')[1]) || 0;
      } catch {
        // a kernel without scheduler statistics: no wait figure
      }
      procs.set(Number(entry), {
        comm,
        ppid: Number(fields[1]),
        ticks: Number(fields[11]) + Number(fields[12]),
        waitNs,
      });
    } catch {
      // the process ended meanwhile
    }
  }
  return procs;
}

function snapshot(): Snapshot {
  let values: number[] = [];
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    // user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
    values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    // not Linux: figures stay empty
  }
  const v = (i: number) => values[i] ?? 0;
  const total = values.reduce((a, b) => a + b, 0);
  return {
    at: performance.now(),
    total,
    busy: total - v(3) - v(4),
    processTime: v(0) + v(1) + v(2),
    irq: v(5) + v(6),
    steal: v(7),
    procs: readProcs(),
  };
}

/** CPU used during an interval, in cores (1.0 = one core fully busy), by group of processes. */
export type CpuUsage = Record<string, number>;

/**
 * Measures who used the CPU between start() and stop(): the named groups of pids,
 * every `postgres` and `redis-server` process, the harness itself, the rest of the
 * machine (`other`, live processes plus those that ended meanwhile; near 0 on an
 * otherwise idle machine), interrupt time (`irq`, mostly loopback networking) and
 * `steal` (time the hypervisor gave to other guests).
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
      // Run-queue wait of this run's processes: the named ones, this run's PostgreSQL, Redis.
      let waitNs = 0;
      const waited = (pid: number) => {
        const a = after.procs.get(pid);
        const b = before.procs.get(pid);
        return a && b && b.waitNs <= a.waitNs ? a.waitNs - b.waitNs : 0;
      };
      for (const pid of claimed) waitNs += waited(pid);
      const others = new Map<string, number>();
      for (const [pid, p] of after.procs) {
        const d = delta(pid);
        all += d;
        if (claimed.has(pid)) continue;
        if (p.comm === 'postgres' && isOwnPostgres(pid, p)) {
          postgres += d;
          waitNs += waited(pid);
        } else if (p.comm.startsWith('redis-server')) {
          redis += d;
          waitNs += waited(pid);
        } else if (d > 0) {
          const label = p.comm === 'postgres' ? 'postgres (not this run)' : p.comm;
          others.set(label, (others.get(label) ?? 0) + d);
        }
      }
      usage.postgres = postgres;
      usage.redis = redis;
      const known = Object.values(usage).reduce((a, b) => a + b, 0);
      // Processes that ended during the interval are gone from /proc but were charged in /proc/stat.
      const exited = Math.max(0, after.processTime - before.processTime - all);
      usage.other = Math.max(0, all - known) + exited;
      if (exited > 0) others.set('(exited)', exited);
      usage.irq = after.irq - before.irq;
      usage.steal = after.steal - before.steal;
      const cores = (ticks: number) => (seconds > 0 ? Math.round((ticks / HZ / seconds) * 100) / 100 : 0);
      const result: CpuUsage = {};
      for (const [group, ticks] of Object.entries(usage)) result[group] = cores(ticks);
      // Who the others are (by command name), when they matter.
      for (const [comm, ticks] of [...others].sort((a, b) => b[1] - a[1]).slice(0, 3)) {
        if (cores(ticks) >= 0.05) result[`other:${comm}`] = cores(ticks);
      }
      // Every CPU's busy time, in cores, for comparison with the sum of the groups.
      const totalSpan = after.total - before.total;
      result.machine = totalSpan > 0 ? Math.round(((after.busy - before.busy) / totalSpan) * cpus * 100) / 100 : 0;
      // How many of them were, on average, ready to run with no CPU free for them (main threads).
      result.waiting = seconds > 0 ? Math.round((waitNs / 1e9 / seconds) * 100) / 100 : 0;
      return result;
    },
  };
}
