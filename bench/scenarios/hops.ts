import { freePort, waitForHttp } from '@vouch/testkit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { paced, warmUpPaced } from '../lib/closed-loop.ts';
import { type Context, type RunningApi, withCpu } from '../lib/context.ts';
import { pacedClient } from '../lib/http-paced.ts';
import { REDIS_URL } from '../lib/infra.ts';
import { spawnJs } from '../lib/procs.ts';
import { LatencyRecorder } from '../lib/stats.ts';

/**
 * Extras, for P4: one bare round trip from the harness to PostgreSQL (`SELECT 1`) or to Redis
 * (`PING`), one at a time and paced like P4 and B5 (the HTTP hop: `runHttpHop`). What a single
 * hop between two processes costs at that pace on this machine, when every process sleeps
 * between requests; P4 makes more such hops than B5 (the HTTP request and its answer, the
 * verification's statements).
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
    await warmUpPaced(profile, op);
    const { result, cpu } = await withCpu(ctx, () =>
      paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
    );
    if (result.errors) throw new Error(`${what}: ${result.errors} errors, first: ${result.firstError}`);
    return { what: `${what}, one at a time, paced like P4`, ratePerSec: profile.pacedRate, ...result, cpu };
  }
}

/**
 * Extra, for P4, P3 and P9: one one-row `INSERT` committed on its own by a plain `pg` client, one at
 * a time, paced like P4, calls alternating between a client with `synchronous_commit` on (what every
 * Vouch write does: the answer waits for the WAL to reach the disk) and one with it off. The
 * difference is what this machine's disk flush adds to a write at that pace: a verification pays it
 * once (P4), and a spend on a hot budget pays it while it holds the budget's row (P3, P9).
 */
export async function runCommitHop(ctx: Context) {
  const connect = async (synchronousCommit: 'on' | 'off') => {
    const client = new pg.Client({
      connectionString: ctx.dbUrl,
      application_name: 'vouch-bench-commit',
      options: `-c synchronous_commit=${synchronousCommit}`,
    });
    await client.connect();
    return client;
  };
  const clients = [await connect('on'), await connect('off')] as const;
  try {
    await clients[0].query(
      'CREATE TABLE IF NOT EXISTS bench_commit_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())',
    );
    const insert = (client: pg.Client) => () => client.query('INSERT INTO bench_commit_probe DEFAULT VALUES');
    const { first, second, ...run } = await pacedPair(ctx, 'commit hop', insert(clients[0]), insert(clients[1]));
    return {
      what: 'a one-row INSERT committed on its own by a plain pg client, one at a time, paced like P4, alternating between synchronous_commit on (latency: the answer waits for the disk) and off (asyncCommit)',
      ...run,
      ...first,
      asyncCommit: second,
    };
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

/**
 * The HTTP hop: `GET /health` on the API and `GET /hello` on B1's bare Fastify server (started
 * again for this), one at a time, paced like P4, calls alternating between the two so both are
 * measured at the same moments. `latency` is the API's, `bareFastify.latency` B1's: what a
 * keep-alive HTTP round trip between two Node processes costs at this pace whatever the route.
 */
export async function runHttpHop(ctx: Context, api: RunningApi) {
  const port = await freePort();
  const b1 = spawnJs(
    'b1-fastify-paced',
    ['bench/baselines/b1-server.mjs', String(port)],
    { NODE_ENV: 'production' },
    ctx.logDir,
  );
  const clients = [pacedClient(api.base), pacedClient(`http://127.0.0.1:${port}`)] as const;
  const paths = ['/health', '/hello'] as const;
  try {
    await waitForHttp(`http://127.0.0.1:${port}/hello`, b1);
    const get = (k: 0 | 1) => async () => {
      const res = await clients[k].get(paths[k]);
      if (res.status !== 200) throw new Error(`GET ${paths[k]} answered ${res.status}`);
    };
    const { first, second, ...run } = await pacedPair(ctx, 'HTTP hop', get(0), get(1));
    return {
      what: 'GET /health on the API (latency) and GET /hello on a bare Fastify server (bareFastify), keep-alive, one at a time, alternating, paced like P4',
      ...run,
      ...first,
      bareFastify: second,
    };
  } finally {
    for (const client of clients) client.close();
    await b1.stop();
  }
}

/**
 * Two operations called one at a time, alternating, paced like P4 after its warm-up, so that both
 * are measured at the same moments of the run: each one's count and latency, and the run's.
 */
async function pacedPair(ctx: Context, name: string, a: () => Promise<unknown>, b: () => Promise<unknown>) {
  const ops = [a, b] as const;
  let recorders = [new LatencyRecorder(), new LatencyRecorder()] as const;
  const op = async (i: number) => {
    const k = (i % 2) as 0 | 1;
    const t0 = performance.now();
    await ops[k]();
    recorders[k].record(performance.now() - t0);
  };
  const { profile } = ctx;
  await warmUpPaced(profile, op);
  recorders = [new LatencyRecorder(), new LatencyRecorder()];
  const { result, cpu } = await withCpu(ctx, () =>
    paced({ ratePerSec: profile.pacedRate, count: profile.pacedCount, op }),
  );
  if (result.errors) throw new Error(`${name}: ${result.errors} errors, first: ${result.firstError}`);
  const summary = (r: LatencyRecorder) => ({ ops: r.count, latency: r.summary() });
  return { ratePerSec: profile.pacedRate, ...result, first: summary(recorders[0]), second: summary(recorders[1]), cpu };
}
