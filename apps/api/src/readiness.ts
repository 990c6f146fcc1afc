import { type QueueReport, type QueueReports, type QueueState, queueNames } from '@vouch/jobs';

/** A dependency's answer to a readiness probe. */
export type CheckState = 'ok' | 'unavailable' | 'not configured';

/** Each dependency: the pings that must all answer, or none when it is not configured. */
export type ReadinessChecks = Record<string, Array<() => Promise<void>>>;

/** A ping that takes longer than this counts as down, so /ready never hangs. */
export const CHECK_TIMEOUT_MS = 1000;

async function within(ping: () => Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check at once; ready when none is unavailable. */
export async function probe(checks: ReadinessChecks, timeoutMs = CHECK_TIMEOUT_MS) {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, pings]): Promise<[string, CheckState]> => {
      if (!pings.length) return [name, 'not configured'];
      try {
        await Promise.all(pings.map((ping) => within(ping, timeoutMs)));
        return [name, 'ok'];
      } catch {
        return [name, 'unavailable'];
      }
    }),
  );
  const results = Object.fromEntries(entries) as Record<string, CheckState>;
  return { ready: !entries.some(([, state]) => state === 'unavailable'), checks: results };
}

/**
 * The queue report is read at most this often: /ready is open to anyone and never rate limited,
 * and each read is a CLIENT LIST per queue, which costs Redis time in proportion to its clients.
 */
export const QUEUE_REPORT_MAX_AGE_MS = 1000;

export interface QueueReporterOptions {
  maxAgeMs?: number;
  timeoutMs?: number;
  /** Called when a queue's state differs from the previous read's (`undefined` on the first read). */
  onChange?: (queue: string, report: QueueReport, previous: QueueState | undefined) => void;
}

/**
 * `inspect` behind a short cache: concurrent probes share one read, a read started less than
 * `maxAgeMs` ago is answered again, and a read that takes longer than `timeoutMs` answers every
 * queue `unknown`, so /ready never waits on Redis for more than its usual bound.
 */
export function queueReporter(inspect: () => Promise<QueueReports>, options: QueueReporterOptions = {}) {
  const maxAgeMs = options.maxAgeMs ?? QUEUE_REPORT_MAX_AGE_MS;
  const timeoutMs = options.timeoutMs ?? CHECK_TIMEOUT_MS;
  const unknown = () =>
    Object.fromEntries(queueNames.map((queue) => [queue, { state: 'unknown' as const }])) as QueueReports;
  let last: { at: number; reports: Promise<QueueReports> } | undefined;
  let seen: Partial<Record<string, QueueState>> = {};

  async function read(): Promise<QueueReports> {
    let timer: NodeJS.Timeout | undefined;
    const reports = await Promise.race([
      inspect().catch(unknown),
      new Promise<QueueReports>((resolve) => {
        timer = setTimeout(() => resolve(unknown()), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    if (options.onChange) {
      for (const [queue, report] of Object.entries(reports)) {
        const previous = seen[queue];
        if (previous !== report.state) options.onChange(queue, report, previous);
      }
    }
    seen = Object.fromEntries(Object.entries(reports).map(([queue, report]) => [queue, report.state]));
    return reports;
  }

  return (): Promise<QueueReports> => {
    const now = performance.now();
    if (!last || now - last.at >= maxAgeMs) last = { at: now, reports: read() };
    return last.reports;
  };
}
