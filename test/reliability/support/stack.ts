import { createDatabase, type Database, sql } from '@vouch/db';
import {
  type ApiProcess,
  alive,
  type DisposableCluster,
  type DisposableRedis,
  kill,
  randomAddress,
  type Spawned,
  startApi,
  startPostgresCluster,
  startRedisServer,
  startWorker,
  tail,
} from '@vouch/testkit';
import { type HttpClient, httpClient } from './http.ts';
import type { Probe } from './probes.ts';

const LIMITS = {
  RATE_LIMIT_DEFAULT: '1000000',
  RATE_LIMIT_REGISTER: '1000000',
  RATE_LIMIT_BATCH: '1000000',
  RATE_LIMIT_COMPUTE: '1000000',
};

export const JOB_WAIT_MS = 1000;

/** One API process with its client and an agent that has a large budget. */
export interface ApiUnderTest {
  name: string;
  api: ApiProcess;
  client: HttpClient;
  agent: string;
}

/**
 * R6/R7: a Postgres cluster and a Redis of the test's own; an API on BullMQ with a worker
 * process, and an API on the in-process runner (no Redis), both on that cluster.
 */
export interface Stack {
  cluster: DisposableCluster;
  redis: DisposableRedis;
  database: Database;
  bullmq: ApiUnderTest;
  inProcess: ApiUnderTest;
  worker: Spawned;
  apis: ApiUnderTest[];
  processes(): Spawned[];
  /** The ledger and budget of an agent, read on the cluster. */
  ledger(agent: string): Promise<{ rows: number; accepted: number; spent: bigint }>;
  close(): Promise<void>;
}

/** A new registered agent with a budget large enough for any load, on `client`'s API. */
export async function budgetAgent(client: HttpClient): Promise<string> {
  const agent = randomAddress();
  const register = await client.post('/api/agents/register', { address: agent });
  const budget = await client.post(`/api/budgets/${agent}/set`, {
    dailyLimit: '1000000000',
    monthlyLimit: '1000000000',
  });
  if (register.status !== 201 || budget.status !== 200)
    throw new Error(`setup failed: ${register.status} ${budget.status}`);
  return agent;
}

/** Fresh agents for a load on every API, so that their books hold that load's spends only. */
export async function loadTargets(stack: Stack): Promise<Array<{ client: HttpClient; agent: string }>> {
  return Promise.all(stack.apis.map(async (a) => ({ client: a.client, agent: await budgetAgent(a.client) })));
}

export async function startStack(): Promise<Stack> {
  const cluster = await startPostgresCluster();
  const redis = await startRedisServer();
  const database = createDatabase({ databaseUrl: cluster.url(), poolMax: 4 });
  const common = { DATABASE_URL: cluster.url(), JOB_WAIT_TIMEOUT_MS: String(JOB_WAIT_MS), ...LIMITS };
  const [bullmqApi, inProcessApi, worker] = await Promise.all([
    startApi({ ...common, REDIS_URL: redis.url, BULLMQ_PREFIX: 'stack', VOUCH_ROLE: 'api' }),
    startApi({ ...common, REDIS_URL: '' }),
    startWorker({
      DATABASE_URL: cluster.url(),
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: 'stack',
      LOG_LEVEL: 'info',
      WORKER_LOCK_DURATION_MS: '4000',
      WORKER_STALLED_INTERVAL_MS: '1000',
    }),
  ]);
  async function withAgent(name: string, api: ApiProcess): Promise<ApiUnderTest> {
    const client = httpClient(api.base, { sockets: 64 });
    return { name, api, client, agent: await budgetAgent(client) };
  }
  const bullmq = await withAgent('api (BullMQ)', bullmqApi);
  const inProcess = await withAgent('api (in-process jobs)', inProcessApi);
  const apis = [bullmq, inProcess];
  return {
    cluster,
    redis,
    database,
    bullmq,
    inProcess,
    worker,
    apis,
    processes: () => [bullmqApi.spawned, inProcessApi.spawned, worker],
    async ledger(agent) {
      const rows = await sql<{ rows: number; accepted: number; spent: string }>`
        SELECT (SELECT count(*)::int FROM spends WHERE agent = ${agent}) AS rows,
               (SELECT count(*)::int FROM spends WHERE agent = ${agent} AND accepted) AS accepted,
               (SELECT daily_spent::text FROM budgets WHERE agent = ${agent}) AS spent`.execute(database.db);
      const row = rows.rows[0];
      return { rows: row?.rows ?? -1, accepted: row?.accepted ?? -1, spent: BigInt(row?.spent ?? -1) };
    },
    async close() {
      for (const a of apis) a.client.close();
      for (const p of [bullmqApi.spawned, inProcessApi.spawned, worker]) await kill(p);
      await database.close().catch(() => {});
      await redis.kill();
      await cluster.destroy();
    },
  };
}

/** The last lines of every process of the stack that no longer runs; '' while all run. */
export function deadProcesses(stack: Stack): string {
  return stack
    .processes()
    .filter((p) => !alive(p))
    .map((p) => tail(p, 20))
    .join('\n');
}

/**
 * What each API must answer while PostgreSQL is away: 503 for everything that needs the
 * database. A queued check on BullMQ needs no database in the API: it is accepted (202 after
 * the wait) and runs once the database is back; the in-process runner has no durable queue,
 * so there it is a 503 like the rest.
 */
export function databaseProbes(target: ApiUnderTest): Probe[] {
  const { agent } = target;
  const p = (name: string, send: Probe['send'], expect: number[], withinMs?: number): Probe => ({
    name: `${target.name} ${name}`,
    send: () => send(target.client),
    expect,
    ...(withinMs && { withinMs }),
  });
  return [
    p('GET /health', (c) => c.get('/health'), [200]),
    p(
      'POST /api/scores/compute',
      (c) =>
        c.post('/api/scores/compute', {
          successRate: 1,
          totalVolume: '1',
          transactionCount: 1,
          budgetCompliance: 1,
          accountAge: 1,
        }),
      [200],
    ),
    p('GET /ready', (c) => c.get('/ready'), [503]),
    p('GET /api/agents', (c) => c.get('/api/agents?limit=5'), [503]),
    p('GET /api/agents/:address', (c) => c.get(`/api/agents/${agent}`), [503]),
    p('GET /api/budgets/:address', (c) => c.get(`/api/budgets/${agent}`), [503]),
    p('POST check', (c) => c.post(`/api/budgets/${agent}/check`, { amount: '1' }), [503]),
    p('POST spend', (c) => c.post(`/api/budgets/${agent}/spend`, { amount: '1' }), [503]),
    p('POST register', (c) => c.post('/api/agents/register', { address: randomAddress() }), [503]),
    p(
      'POST record',
      (c) => c.post('/api/transactions/record', { agent, txHash: `0x${'ab'.repeat(32)}`, amount: '5', type: 0 }),
      [503],
    ),
    p('POST enrich', (c) => c.post('/api/scores/enrich', { agent }), [503]),
    p(
      'POST batch-scores',
      (c) => c.post('/api/agents/batch-scores', { agents: [agent], scores: [1], reasons: ['0x'] }),
      [503],
    ),
    p('POST recompute', (c) => c.post('/api/scores/recompute', { agents: [agent] }), [503]),
    // Both transports keep a job whose database is away and run it again once it is back
    // (packages/jobs/src/executor.ts): the caller gets 202 with the job's id after its wait.
    p('POST /api/verify', (c) => c.post('/api/verify', { address: randomAddress() }), [202], JOB_WAIT_MS + 1000),
  ];
}
