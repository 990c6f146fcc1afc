import { type Context, type CpuUsage, withCpu } from './context.ts';
import { assertClean, type HttpLoadOptions, type HttpLoadResult, httpLoad } from './http-load.ts';

export type MeasuredHttp = HttpLoadResult & {
  cpu: CpuUsage;
  durationSec: number;
  warmupSec: number;
  /** CPU time the server process spent per 2xx response, µs (its cores ÷ req/s). */
  serverCpuMicrosPerRequest: number | null;
};

/**
 * The standard HTTP load test: `warmupSec` of the same load (discarded), then `durationSec`
 * measured, with the CPU of every known process metered over the measured part only.
 */
export async function loadTest(
  ctx: Context,
  name: string,
  options: Omit<HttpLoadOptions, 'durationSec'> & { durationSec?: number },
  allowedStatuses: number[] = [],
  /** The CPU group of the server under test (`api`, `b1`). */
  server = 'api',
): Promise<MeasuredHttp> {
  const durationSec = options.durationSec ?? ctx.profile.durationSec;
  if (ctx.profile.warmupSec) await httpLoad({ ...options, durationSec: ctx.profile.warmupSec }, false);
  const { result, cpu } = await withCpu(ctx, () => httpLoad({ ...options, durationSec }));
  assertClean(name, result, allowedStatuses);
  const cores = cpu[server];
  return {
    ...result,
    cpu,
    durationSec,
    warmupSec: ctx.profile.warmupSec,
    serverCpuMicrosPerRequest: cores !== undefined && result.rps > 0 ? Math.round((cores / result.rps) * 1e6) : null,
  };
}
