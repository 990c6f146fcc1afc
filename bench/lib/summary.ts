import type { LatencySummary } from './stats.ts';

const n = (v: number) => Math.round(v).toLocaleString('en-US');
const ms = (v: number) => `${v.toFixed(v < 10 ? 2 : 1)} ms`;

/** One line per scenario for the log and the second table. */
export function summaryLine(s: Record<string, unknown>): string {
  const parts: string[] = [];
  const latency = s.latency as LatencySummary | undefined;
  if (typeof s.rps === 'number') parts.push(`${n(s.rps)} req/s`);
  if (typeof s.opsPerSec === 'number') parts.push(`${n(s.opsPerSec)} ops/s`);
  if (latency && latency.count > 0)
    parts.push(`p50 ${ms(latency.p50)}, p99 ${ms(latency.p99)} (${n(latency.count)} samples)`);
  const unprepared = (s.unprepared as { latency?: LatencySummary } | undefined)?.latency;
  if (unprepared && unprepared.count > 0)
    parts.push(`without prepared statements p50 ${ms(unprepared.p50)}, p99 ${ms(unprepared.p99)}`);
  const first = (s.first as { latency?: LatencySummary } | undefined)?.latency;
  if (first && first.count > 0) parts.push(`first verification p50 ${ms(first.p50)}, p99 ${ms(first.p99)}`);
  const off = (s.off as { latency?: LatencySummary } | undefined)?.latency;
  if (off && off.count > 0)
    parts.push(`with EVENTS=off p50 ${ms(off.p50)}, p99 ${ms(off.p99)} (events add ${ms(Number(s.addedMs))} at p50)`);
  const asyncCommit = (s.asyncCommit as { latency?: LatencySummary } | undefined)?.latency;
  if (asyncCommit && asyncCommit.count > 0)
    parts.push(`with synchronous_commit=off p50 ${ms(asyncCommit.p50)}, p99 ${ms(asyncCommit.p99)}`);
  const bare = (s.bareFastify as { latency?: LatencySummary } | undefined)?.latency;
  if (bare && bare.count > 0) parts.push(`bare Fastify p50 ${ms(bare.p50)}, p99 ${ms(bare.p99)}`);
  const staleness = s.staleness as LatencySummary | undefined;
  if (staleness && staleness.count > 0) {
    const writes = s.writes as { achievedPerSec?: number } | undefined;
    const reads = s.readLoad as { rps?: number } | undefined;
    parts.push(
      `commit → other replica's drop p50 ${ms(staleness.p50)}, p99 ${ms(staleness.p99)}, max ${ms(staleness.max)} (${n(staleness.count)} writes at ${writes?.achievedPerSec}/s, reader at ${n(reads?.rps ?? 0)} req/s)`,
    );
    if (s.unmatched) parts.push(`${s.unmatched} writes without a drop`);
    const idle = (s.idleReader as { staleness?: LatencySummary } | null | undefined)?.staleness;
    if (idle && idle.count > 0)
      parts.push(`reader idle p50 ${ms(idle.p50)}, p99 ${ms(idle.p99)}, max ${ms(idle.max)} (${n(idle.count)} writes)`);
  }
  if (typeof s.medianMs === 'number') parts.push(`median ${ms(s.medianMs)} of ${JSON.stringify(s.runsMs)}`);
  const chunked = s.chunked as { medianMs?: number } | undefined;
  const twoAtOnce = s.chunkedTwoAtOnce as { medianMs?: number; speedup?: number } | undefined;
  if (chunked?.medianMs && twoAtOnce?.medianMs)
    parts.push(
      `in chunks one at a time ${ms(chunked.medianMs)}, two at a time ${ms(twoAtOnce.medianMs)} (${twoAtOnce.speedup}×)`,
    );
  if (typeof s.serverCpuMicrosPerRequest === 'number') parts.push(`server CPU ${s.serverCpuMicrosPerRequest} µs/req`);
  const memory = s.memory as { peakRssMB?: number } | undefined;
  if (memory?.peakRssMB) parts.push(`server peak RSS ${memory.peakRssMB} MB`);
  if (typeof s.overspendFree === 'boolean')
    parts.push(s.overspendFree ? '0 overspend' : 'OVERSPEND OR LEDGER MISMATCH');
  const phases = s.phases as (Record<string, { mean: number }> & { error?: string }) | undefined;
  if (phases?.error) parts.push(`phases not timed: ${phases.error}`);
  else if (phases) {
    const means = ['toQueued', 'queuedToStarted', 'running', 'finishedToAnswer'].map(
      (k) => phases[k]?.mean ?? Number.NaN,
    );
    parts.push(`mean ms sent→created→asked→done→answered: ${means.map((v) => v.toFixed(2)).join(' + ')}`);
  }
  const cpu = s.cpu as Record<string, number> | undefined;
  if (cpu) {
    const busy = Object.entries(cpu)
      .filter(([k, v]) => k !== 'machine' && k !== 'waiting' && v >= 0.05)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`);
    const waiting = cpu.waiting === undefined ? '' : `, waiting for a CPU ${cpu.waiting.toFixed(2)}`;
    parts.push(`cpu cores: ${busy.join(', ')} (machine ${cpu.machine?.toFixed(2)}${waiting})`);
  }
  return parts.join('; ');
}
