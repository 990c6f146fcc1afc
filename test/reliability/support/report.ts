import { appendFileSync } from 'node:fs';

/**
 * Prints the figures a reliability test measured (recovery times, counts) as one line,
 * and appends them to the file named by VOUCH_RELIABILITY_REPORT when set, so a run can
 * be summarised in docs/RELIABILITY.md.
 */
export function report(row: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ row, at: new Date().toISOString(), ...figures });
  console.log(`[reliability] ${line}`);
  const file = process.env.VOUCH_RELIABILITY_REPORT;
  if (file) appendFileSync(file, `${line}\n`);
}

/** Rounds milliseconds for reports. */
export const ms = (value: number) => Math.round(value);
