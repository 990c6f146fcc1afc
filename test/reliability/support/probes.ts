import { sleep, until } from '@vouch/testkit';
import { expect } from 'vitest';
import type { Answer, HttpClient } from './http.ts';

/** A request the test repeats while a dependency is down, and what it must answer. */
export interface Probe {
  name: string;
  send: (client: HttpClient) => Promise<Answer>;
  /** Statuses that are right while the dependency is down. */
  expect: number[];
  /** The longest an answer may take (default: the check's). */
  withinMs?: number;
}

export interface ProbeLog {
  name: string;
  status: number;
  ms: number;
  code?: string;
  jobId?: string;
  error?: string;
  at: number;
}

/** Sends every probe at once, again and again, for `durationMs`; returns every answer. */
export async function probeFor(
  client: HttpClient,
  probes: Probe[],
  durationMs: number,
  pauseMs = 150,
): Promise<ProbeLog[]> {
  const log: ProbeLog[] = [];
  const until = performance.now() + durationMs;
  while (performance.now() < until) {
    const at = performance.now();
    const answers = await Promise.all(probes.map((p) => p.send(client)));
    answers.forEach((a, i) => {
      log.push({
        name: probes[i]?.name ?? '?',
        status: a.status,
        ms: a.ms,
        code: a.body?.error?.code,
        jobId: a.body?.data?.jobId,
        error: a.error,
        at,
      });
    });
    await sleep(pauseMs);
  }
  return log;
}

/** Every probe answered what it should, each within `withinMs`. */
export function expectProbes(probes: Probe[], log: ProbeLog[], withinMs: number): void {
  for (const probe of probes) {
    const answers = log.filter((l) => l.name === probe.name);
    expect(answers.length, probe.name).toBeGreaterThan(0);
    const wrong = answers.filter((a) => !probe.expect.includes(a.status));
    expect(
      wrong
        .map((w) => `${probe.name}: ${w.status} ${w.code ?? w.error ?? ''} after ${Math.round(w.ms)} ms`)
        .slice(0, 5),
    ).toEqual([]);
    const slow = answers.filter((a) => a.ms > (probe.withinMs ?? withinMs));
    expect(slow.map((s) => `${probe.name}: ${Math.round(s.ms)} ms`).slice(0, 5)).toEqual([]);
    for (const a of answers) if (a.status === 503) expect(a.code, probe.name).toBe('SERVICE_UNAVAILABLE');
  }
}

/** The slowest answer of each probe, for reports. */
export function slowest(log: ProbeLog[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of log) out[l.name] = Math.max(out[l.name] ?? 0, Math.round(l.ms));
  return out;
}

/** Polls GET /api/jobs/:id for each job until it has completed; a job that fails fails the test. */
export async function expectJobsCompleted(client: HttpClient, jobIds: string[], timeoutMs: number): Promise<void> {
  for (const id of jobIds) {
    await until(
      async () => {
        const res = await client.get(`/api/jobs/${id}`);
        expect(res.body?.data?.status, `${id}: ${JSON.stringify(res.body)}`).not.toBe('failed');
        return res.body?.data?.status === 'completed';
      },
      timeoutMs,
      200,
    );
  }
}
