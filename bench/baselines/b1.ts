import { freePort, waitForHttp } from '@vouch/testkit';
import type { Context } from '../lib/context.ts';
import { loadTest, type MeasuredHttp } from '../lib/load-test.ts';
import { sampleRss, spawnJs } from '../lib/procs.ts';

/** B1: bare Fastify hello-world (bench/baselines/b1-server.mjs, plain node) in its own process, same connections as P1. */
export async function runB1(
  ctx: Context,
): Promise<MeasuredHttp & { what: string; pid: number; memory: { peakRssMB: number } }> {
  const port = await freePort();
  const proc = spawnJs(
    'b1-fastify',
    ['bench/baselines/b1-server.mjs', String(port)],
    { NODE_ENV: 'production' },
    ctx.logDir,
  );
  try {
    const url = `http://127.0.0.1:${port}/hello`;
    await waitForHttp(url, proc);
    ctx.pids.b1 = [proc.pid];
    const sampler = sampleRss(proc.pid);
    const r = await loadTest(ctx, 'B1', { url, connections: ctx.profile.connections }, [], 'b1');
    const mem = sampler.stop();
    return {
      what: 'bare Fastify hello-world, GET /hello → {"hello":"world"}',
      pid: proc.pid,
      ...r,
      // For P7's context: the same runtime (plain node + fastify) under the same load.
      memory: { peakRssMB: Math.round((mem.peakRssBytes / 2 ** 20) * 10) / 10 },
    };
  } finally {
    delete ctx.pids.b1;
    await proc.stop();
  }
}
