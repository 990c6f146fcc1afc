import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';
import { LatencyRecorder, type LatencySummary, round } from './stats.ts';

export interface HttpLoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  connections: number;
  /** Seconds of load; ignored when `amount` is set. */
  durationSec?: number;
  /** Stop after this many requests instead of a duration. */
  amount?: number;
  /** Requests per second over all connections (open pacing); unset → as fast as possible. */
  overallRate?: number;
  /** Per-request timeout, seconds. */
  timeoutSec?: number;
  /** A sequence of requests on `url`'s host, each connection sending them in turn (instead of `url` alone). */
  requests?: Array<{ method: 'GET' | 'POST'; path: string; body?: string }>;
}

export interface HttpLoadResult {
  connections: number;
  elapsedSec: number;
  /** Responses with a 2xx status. */
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** 2xx responses per second. */
  rps: number;
  /** Latency of 2xx responses, ms (exact, from autocannon's per-response timings). */
  latency: LatencySummary;
}

/** One autocannon run in this process; latencies are recorded only when `measure`. */
export async function httpLoad(options: HttpLoadOptions, measure = true): Promise<HttpLoadResult> {
  const recorder = new LatencyRecorder();
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let non2xx = 0;
  let started = 0;
  // Without a callback autocannon returns its tracker (an EventEmitter) made thenable; the types only say Promise.
  const instance = autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    ...(options.body !== undefined && { body: options.body }),
    headers: { ...(options.body !== undefined && { 'content-type': 'application/json' }), ...options.headers },
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.durationSec }),
    ...(options.overallRate && { overallRate: options.overallRate }),
    ...(options.requests && {
      requests: options.requests.map((r) => ({
        ...r,
        ...(r.body !== undefined && { headers: { 'content-type': 'application/json' } }),
      })),
    }),
    timeout: options.timeoutSec ?? 10,
    // A 4xx/5xx is counted, not retried; the connection stays.
    excludeErrorStats: true,
  }) as unknown as Promise<autocannon.Result> & EventEmitter;
  instance.on('start', () => {
    started = performance.now();
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    if (statusCode >= 200 && statusCode < 300) {
      ok++;
      if (measure) recorder.record(responseTime);
    } else {
      non2xx++;
    }
  });
  const result = await instance;
  const elapsedSec = (performance.now() - (started || performance.now())) / 1000;
  return {
    connections: options.connections,
    elapsedSec: round(elapsedSec),
    ok,
    non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    rps: round(elapsedSec > 0 ? ok / elapsedSec : 0, 1),
    latency: recorder.summary(),
  };
}

/** Fails when a measured run saw errors or unexpected statuses (the figures would be meaningless). */
export function assertClean(name: string, r: HttpLoadResult, allowed: number[] = []): void {
  const unexpected = Object.entries(r.statusCodes).filter(
    ([code]) => !(Number(code) >= 200 && Number(code) < 300) && !allowed.includes(Number(code)),
  );
  if (unexpected.length || r.errors > 0 || r.ok === 0) {
    throw new Error(
      `${name}: ${r.ok} ok, statuses ${JSON.stringify(r.statusCodes)}, ${r.errors} errors, ${r.timeouts} timeouts`,
    );
  }
}
