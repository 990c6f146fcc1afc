/** The goals of the performance issue, and how each is judged from the measurements. */

export interface Figure {
  /** Which measurement this is (scenario id). */
  id: string;
  value: number;
  unit: string;
  /** A short human text, e.g. "4 812 req/s (p99 12.3 ms)". */
  text: string;
}

export interface Bound {
  op: '>=' | '<=';
  value: number;
  text: string;
}

export interface GoalEntry {
  id: string;
  what: string;
  subject: Figure | null;
  baseline: Figure | null;
  /**
   * The quantity floor and target apply to: subject ÷ baseline for most goals, subject − baseline
   * in ms for P4, the subject itself for P4b and P7, baseline ÷ subject (speed-up) for P6.
   */
  ratio: number | null;
  ratioKind: 'ratio' | 'delta-ms' | 'absolute' | 'speedup';
  floor: Bound;
  target: Bound;
  /** The floor holds. */
  pass: boolean;
  targetMet: boolean;
  notes: string[];
  error?: string;
  /** Cores used by processes outside the run (plus steal) during each measurement this goal uses. */
  interference?: Record<string, number>;
  /** Some of those measurements were disturbed (see bench/lib/quiet.ts): read the figure with care. */
  noisy?: boolean;
}

export interface GoalEvaluation {
  subject: Figure;
  baseline: Figure | null;
  ratio: number;
  notes?: string[];
  /** Extra condition of the floor (P3: no overspend). */
  floorAlso?: { holds: boolean; text: string };
}

export interface GoalDef {
  id: string;
  what: string;
  ratioKind: GoalEntry['ratioKind'];
  floor: Bound;
  target: Bound;
}

const ge = (value: number, text: string): Bound => ({ op: '>=', value, text });
const le = (value: number, text: string): Bound => ({ op: '<=', value, text });

export const goalDefs: GoalDef[] = [
  {
    id: 'P1',
    what: 'GET /api/agents/:address/score throughput vs B1',
    ratioKind: 'ratio',
    floor: ge(0.4, '≥ 40 %'),
    target: ge(0.55, '≥ 55 %'),
  },
  {
    id: 'P1b',
    what: 'same route p99 vs B1 p99, same connections',
    ratioKind: 'ratio',
    floor: le(3, '≤ 3×'),
    target: le(2, '≤ 2×'),
  },
  {
    id: 'P1c',
    what: 'same route vs B2',
    ratioKind: 'ratio',
    floor: ge(0.8, '≥ 80 %'),
    target: ge(0.9, '≥ 90 %'),
  },
  {
    id: 'P2',
    what: 'POST /api/budgets/:address/check throughput vs B1, rate limiter on',
    ratioKind: 'ratio',
    floor: ge(0.35, '≥ 35 %'),
    target: ge(0.5, '≥ 50 %'),
  },
  {
    id: 'P8',
    what: 'POST /api/decisions p50 vs the budget check’s p50 (X-P2-ratelimit-off), same API, same connections',
    ratioKind: 'ratio',
    floor: le(2, '≤ 2×'),
    target: le(1.5, '≤ 1.5×'),
  },
  {
    id: 'P8b',
    what: 'POST /api/decisions throughput vs B1',
    ratioKind: 'ratio',
    floor: ge(0.25, '≥ 25 %'),
    target: ge(0.35, '≥ 35 %'),
  },
  {
    id: 'P3',
    what: 'spends on one hot budget over HTTP (50 connections) vs B3',
    ratioKind: 'ratio',
    floor: ge(0.6, '≥ 60 %, 0 overspend'),
    target: ge(0.8, '≥ 80 %'),
  },
  {
    id: 'P4',
    what: 'POST /api/verify round trip p50 at 20 req/s vs B5 p50',
    ratioKind: 'delta-ms',
    floor: le(3, '≤ B5 + 3 ms'),
    target: le(1.5, '≤ B5 + 1.5 ms'),
  },
  {
    id: 'P4b',
    what: 'same, p99',
    ratioKind: 'absolute',
    floor: le(25, '≤ 25 ms'),
    target: le(10, '≤ 10 ms'),
  },
  {
    id: 'P5',
    what: 'recompute 10,000 agents end to end, one worker, vs B7',
    ratioKind: 'ratio',
    floor: le(2, '≤ 2×'),
    target: le(1.3, '≤ 1.3×'),
  },
  {
    id: 'P6',
    what: 'the same with two worker processes vs one',
    ratioKind: 'speedup',
    floor: ge(1.5, '≥ 1.5× faster'),
    target: ge(1.8, '≥ 1.8×'),
  },
  {
    id: 'P7',
    what: 'API process peak RSS during P1',
    ratioKind: 'absolute',
    floor: le(200, '≤ 200 MB'),
    target: le(120, '≤ 120 MB'),
  },
  {
    id: 'P9',
    what: 'events add ≤ 10 % to spend throughput (one hot budget, same run, events on vs off)',
    ratioKind: 'ratio',
    floor: ge(0.9, '≥ 90 %'),
    target: ge(0.95, '≥ 95 %'),
  },
];

const holds = (b: Bound, v: number) => (b.op === '>=' ? v >= b.value : v <= b.value);

export function judge(def: GoalDef, evaluate: () => GoalEvaluation): GoalEntry {
  const base = {
    id: def.id,
    what: def.what,
    ratioKind: def.ratioKind,
    floor: def.floor,
    target: def.target,
  };
  try {
    const e = evaluate();
    if (!Number.isFinite(e.ratio)) throw new Error('no finite figure was measured');
    const also = e.floorAlso;
    const notes = [...(e.notes ?? []), ...(also ? [also.text] : [])];
    const pass = holds(def.floor, e.ratio) && (also?.holds ?? true);
    return {
      ...base,
      subject: e.subject,
      baseline: e.baseline,
      ratio: Math.round(e.ratio * 1000) / 1000,
      pass,
      targetMet: pass && holds(def.target, e.ratio),
      notes,
    };
  } catch (error) {
    return {
      ...base,
      subject: null,
      baseline: null,
      ratio: null,
      pass: false,
      targetMet: false,
      notes: [],
      error: (error as Error).message,
    };
  }
}

export function formatRatio(entry: GoalEntry): string {
  if (entry.ratio === null) return '—';
  switch (entry.ratioKind) {
    case 'ratio':
      return entry.floor.text.includes('%') ? `${(entry.ratio * 100).toFixed(1)} %` : `${entry.ratio.toFixed(2)}×`;
    case 'speedup':
      return `${entry.ratio.toFixed(2)}×`;
    case 'delta-ms':
      return `${entry.ratio >= 0 ? '+' : ''}${entry.ratio.toFixed(2)} ms`;
    case 'absolute':
      return `${entry.ratio.toFixed(entry.subject?.unit === 'MB' ? 0 : 2)} ${entry.subject?.unit ?? ''}`;
  }
}
