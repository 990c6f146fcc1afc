import { Redis } from 'ioredis';
import pg from 'pg';
import { paced } from '../lib/closed-loop.ts';
import { type Context, withCpu } from '../lib/context.ts';
import { REDIS_URL } from '../lib/infra.ts';

/**
 * Extras, for P4: one bare round trip from the harness to PostgreSQL (`SELECT 1`) or to Redis
 * (`PING`), one at a time and paced like P4 and B5. What a single hop between two processes
 * costs at that pace on this machine, when every process sleeps between requests; P4 makes
 * more such hops than B5 (the HTTP request and its answer, the verification's statements).
 */
export async function runHop(ctx: Context, target: 'postgres' | 'redis') {
  const { profile } = ctx;
  if (target === 'postgres') {
    const client = new pg.Client({ connectionString: ctx.dbUrl, application_name: 'vouch-bench-hop' });
    await client.connect();
    try {
      return await measure('SELECT 1 by a plain pg client', () => client.query('SELECT 1'));
    } finally {
      await client.end();
    }
  }
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    return await measure('PING by an ioredis client', () => client.ping());
  } finally {
    client.disconnect();
  }

  async function measure(what: string, op: () => Promise<unknown>) {
    await paced({ ratePerSec: profile.pacedRate, count: profile.pacedWarmup, op });
    const { result, cpu } = await withCpu(ctx, () =>
      paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
    );
    if (result.errors) throw new Error(`${what}: ${result.errors} errors, first: ${result.firstError}`);
    return { what: `${what}, one at a time, paced like P4`, ratePerSec: profile.pacedRate, ...result, cpu };
  }
}
