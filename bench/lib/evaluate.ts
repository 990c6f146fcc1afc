import type { Context } from './context.ts';
import { type Figure, type GoalEntry, type GoalEvaluation, goalDefs, judge } from './goals.ts';
import { NOISE_CORES } from './quiet.ts';
import type { LatencySummary } from './stats.ts';

type Scenario = Record<string, unknown> & { latency?: LatencySummary };

const int = (v: number) => Math.round(v).toLocaleString('en-US');

function need(ctx: Context, id: string): Scenario {
  const s = ctx.scenarios[id];
  if (!s) throw new Error(`${id} was not measured${ctx.errors[id] ? `: ${ctx.errors[id]}` : ''}`);
  return s as Scenario;
}

function throughput(ctx: Context, id: string): Figure {
  const s = need(ctx, id);
  const perSec = (s.rps ?? s.opsPerSec) as number;
  const unit = s.rps !== undefined ? 'req/s' : 'ops/s';
  return { id, value: perSec, unit, text: `${int(perSec)} ${unit}` };
}

function latency(ctx: Context, id: string, p: 'p50' | 'p99'): Figure {
  const l = need(ctx, id).latency;
  if (!l) throw new Error(`${id} has no latency`);
  return { id, value: l[p], unit: 'ms', text: `${p} ${l[p].toFixed(2)} ms` };
}

function duration(ctx: Context, id: string): Figure {
  const v = need(ctx, id).medianMs as number;
  return { id, value: v / 1000, unit: 's', text: `${(v / 1000).toFixed(2)} s` };
}

function ratioOf(subject: Figure, baseline: Figure, notes?: string[]): GoalEvaluation {
  return { subject, baseline, ratio: subject.value / baseline.value, ...(notes && { notes }) };
}

export function evaluateGoals(ctx: Context): GoalEntry[] {
  const rules: Record<string, () => GoalEvaluation> = {
    P1: () => ratioOf(throughput(ctx, 'P1'), throughput(ctx, 'B1')),
    P1b: () => ratioOf(latency(ctx, 'P1', 'p99'), latency(ctx, 'B1', 'p99')),
    P1c: () => ratioOf(throughput(ctx, 'P1'), throughput(ctx, 'B2')),
    P2: () => {
      const p2 = need(ctx, 'P2');
      const limiter = String(p2.rateLimiter);
      const e = ratioOf(throughput(ctx, 'P2'), throughput(ctx, 'B1'), [`rate limiter ${limiter}`]);
      if (!limiter.startsWith('on')) throw new Error(`P2 must run with the rate limiter on, but it was ${limiter}`);
      return e;
    },
    P3: () => {
      const p3 = need(ctx, 'P3');
      const audit = p3.audit as {
        acceptedSpends: number;
        http200s: number;
        acceptedWithoutAnswer: number;
        overspend: string;
        spentEqualsLedger: boolean;
      };
      const probe = p3.overspendProbe as { exact: boolean; acceptedSpends: number; dailyLimit: string };
      return {
        ...ratioOf(throughput(ctx, 'P3'), throughput(ctx, 'B3'), [
          `hot budget: overspend ${audit.overspend}, spent = Σ accepted ledger: ${audit.spentEqualsLedger}, ledger accepted ${audit.acceptedSpends} = HTTP 200s ${audit.http200s} + ${audit.acceptedWithoutAnswer} in flight when autocannon stopped`,
          `overspend probe: ${probe.acceptedSpends} accepted of a ${probe.dailyLimit}-spend budget (exact: ${probe.exact})`,
        ]),
        floorAlso: {
          holds: p3.overspendFree === true,
          text: p3.overspendFree ? '0 overspend' : 'overspend or ledger mismatch',
        },
      };
    },
    P8: () => {
      const stored = need(ctx, 'P8').decisionsStored as number;
      return ratioOf(latency(ctx, 'P8', 'p50'), latency(ctx, 'X-P2-ratelimit-off', 'p50'), [
        `${stored} decisions stored`,
      ]);
    },
    P8b: () => ratioOf(throughput(ctx, 'P8'), throughput(ctx, 'B1')),
    P9: () => {
      const p9 = need(ctx, 'P9');
      type Side = {
        rps: number;
        events: number;
        overspend: string;
        spentEqualsLedger: boolean;
        apiCpuMicrosPerSpend: number;
        postgresCpuMicrosPerSpend: number;
      };
      const on = p9.on as Side;
      const off = p9.off as Side;
      if (!(on.events > 0) || off.events !== 0) {
        throw new Error(
          `P9: spend events written on ${on.events}, off ${off.events}: the halves are not what they say`,
        );
      }
      const segments = p9.segments as Array<{ events: string; rps: number }>;
      const of = (side: string) =>
        segments
          .filter((x) => x.events === side)
          .map((x) => int(x.rps))
          .join(', ');
      const fair = on.overspend === '0' && off.overspend === '0' && on.spentEqualsLedger && off.spentEqualsLedger;
      return {
        subject: { id: 'P9', value: on.rps, unit: 'req/s', text: `${int(on.rps)} req/s events on` },
        baseline: { id: 'P9', value: off.rps, unit: 'req/s', text: `${int(off.rps)} req/s events off` },
        ratio: on.rps / off.rps,
        notes: [
          `segments on: ${of('on')}; off: ${of('off')} req/s`,
          `CPU per spend, on vs off: API ${on.apiCpuMicrosPerSpend} vs ${off.apiCpuMicrosPerSpend} µs, PostgreSQL ${on.postgresCpuMicrosPerSpend} vs ${off.postgresCpuMicrosPerSpend} µs`,
          `events on wrote ${on.events} spend events`,
        ],
        floorAlso: { holds: fair, text: fair ? '0 overspend' : 'overspend or ledger mismatch' },
      };
    },
    P4: () => {
      const s = latency(ctx, 'P4', 'p50');
      const b = latency(ctx, 'B5', 'p50');
      return { subject: s, baseline: b, ratio: s.value - b.value };
    },
    P4b: () => {
      const s = latency(ctx, 'P4', 'p99');
      const b = latency(ctx, 'B5', 'p99');
      return { subject: s, baseline: b, ratio: s.value, notes: [`${(s.value / b.value).toFixed(2)}× B5 p99`] };
    },
    P5: () => ratioOf(duration(ctx, 'P5'), duration(ctx, 'B7')),
    P6: () => {
      const s = duration(ctx, 'P6');
      const b = { ...duration(ctx, 'P5'), id: 'P5' };
      const workers = need(ctx, 'P6').workersSeen as string[];
      return {
        subject: s,
        baseline: b,
        ratio: b.value / s.value,
        notes: [`workers that took chunks: ${workers.length}`],
      };
    },
    P7: () => {
      const memory = need(ctx, 'P1').memory as { peakRssMB: number; vmHwmMB: number | null; idleRssMB: number | null };
      return {
        subject: { id: 'P1', value: memory.peakRssMB, unit: 'MB', text: `${memory.peakRssMB.toFixed(0)} MB peak RSS` },
        baseline: null,
        ratio: memory.peakRssMB,
        notes: [
          `RSS when idle before P1: ${memory.idleRssMB} MB; VmHWM at the end of P1 (since process start): ${memory.vmHwmMB} MB; B1's bare Fastify process peaked at ${(ctx.scenarios.B1?.memory as { peakRssMB?: number } | undefined)?.peakRssMB ?? '?'} MB`,
        ],
      };
    },
  };
  const uses: Record<string, string[]> = {
    P1: ['P1', 'B1'],
    P1b: ['P1', 'B1'],
    P1c: ['P1', 'B2'],
    P2: ['P2', 'B1'],
    P3: ['P3', 'B3'],
    P4: ['P4', 'B5'],
    P4b: ['P4', 'B5'],
    P5: ['P5', 'B7'],
    P6: ['P6', 'P5'],
    P7: ['P1'],
    P8: ['P8', 'X-P2-ratelimit-off'],
    P8b: ['P8', 'B1'],
    P9: ['P9'],
  };
  return goalDefs.map((def) => {
    const entry = judge(def, rules[def.id] as () => GoalEvaluation);
    const interference: Record<string, number> = {};
    for (const id of uses[def.id] ?? []) {
      const cpu = ctx.scenarios[id]?.cpu as Record<string, number> | undefined;
      if (cpu?.other !== undefined) interference[id] = Math.round((cpu.other + (cpu.steal ?? 0)) * 100) / 100;
    }
    return { ...entry, interference, noisy: Object.values(interference).some((v) => v > NOISE_CORES) };
  });
}
