import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { formatRatio, type GoalEntry } from './goals.ts';

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

export function verdict(g: GoalEntry): string {
  const noisy = g.noisy ? ' ⚠ noisy' : '';
  if (g.error) return 'ERROR';
  if (!g.pass) return `FAIL${noisy}`;
  return `${g.targetMet ? 'PASS (target met)' : 'PASS (floor)'}${noisy}`;
}

export function goalsTable(goals: GoalEntry[]): string {
  return table(
    ['id', 'what', 'subject', 'baseline', 'ratio', 'floor', 'target', 'result'],
    goals.map((g) => [
      g.id,
      g.what,
      g.subject?.text ?? (g.error ? `error: ${g.error.slice(0, 60)}` : '—'),
      g.baseline ? `${g.baseline.id} ${g.baseline.text}` : '—',
      formatRatio(g),
      g.floor.text,
      g.target.text,
      verdict(g),
    ]),
  );
}

export function writeJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** 12345.6 → "12 346" (thin grouping keeps the table readable). */
export function fmtInt(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

export const fmtMs = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
