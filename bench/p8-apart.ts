/**
 * P8 measured apart: `node --import tsx bench/p8-apart.ts [rounds] [seconds] [check|decision]`.
 *
 * One API process as the bench starts it (bundled, RATE_LIMIT=off, on PostgreSQL), the bench's
 * budget check and decision (an agent with a budget and P8's three-rule policy), measured in
 * alternating rounds of 50 connections each, so that a machine whose speed drifts over minutes
 * drifts for both alike. Each round prints its requests/s, p50, and the CPU the API and this
 * run's PostgreSQL spent per request; the end, how many decisions each store statement carried.
 * A diagnostic for bench/CHANGELOG.md, not a goal: the goals are judged by `npm run bench`.
 * `P8_APART_NODE_OPTIONS` is the API's NODE_OPTIONS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p8`
 * for a CPU profile of it written when the run stops it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, sql } from '@vouch/db';
import { SEEDED_SCORE, seedScoredAgents } from '@vouch/testkit';
import { cleanup, installSignalHandlers } from './lib/cleanup.ts';
import { type Context, call, startApi } from './lib/context.ts';
import { cpuMeter, setOwnPostgres } from './lib/cpu.ts';
import { P8_POLICY, p8Decision } from './lib/decide.ts';
import { envVar } from './lib/env.ts';
import { type HttpLoadOptions, httpLoad } from './lib/http-load.ts';
import { benchPrefix, createBenchDatabase } from './lib/infra.ts';
import { profiles } from './lib/profile.ts';

const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 6);
/** `check` or `decision`: only that load (a profile of one); both alternate without it. */
const only = process.argv[4];

async function main() {
  installSignalHandlers();
  const { name: dbName, url: dbUrl } = await createBenchDatabase();
  const partial = {
    profile: profiles.quick,
    logDir: mkdtempSync(join(tmpdir(), 'vouch-p8-apart-')),
    dbName,
    dbUrl,
    prefix: benchPrefix(),
    scenarios: {},
    errors: {},
    pids: {},
    envs: {},
  };
  const api = await startApi(partial as unknown as Context, 'api', {
    rateLimit: 'off',
    nodeOptions: envVar('P8_APART_NODE_OPTIONS'),
  });
  const database = createDatabase({ databaseUrl: dbUrl, poolMax: 2, applicationName: 'vouch-p8-apart' });
  try {
    const backend = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(database.db);
    setOwnPostgres(backend.rows[0]?.pid ?? 0, dbName);
    const [check, decide] = (await seedScoredAgents(database.db, 2)) as [string, string];
    // The score a recomputation gives a seeded agent, without the recomputation.
    await sql`UPDATE agents SET score = ${SEEDED_SCORE}`.execute(database.db);
    const huge = (10n ** 30n).toString();
    for (const agent of [check, decide]) {
      await call(api.base, 'POST', `/api/budgets/${agent}/set`, { dailyLimit: huge, monthlyLimit: huge });
    }
    await call(api.base, 'PUT', `/api/agents/${decide}/policy`, P8_POLICY);
    const decision = p8Decision(decide);
    const probe = await call<{ data?: { policy?: { matchedRule?: string } } }>(
      api.base,
      'POST',
      '/api/decisions',
      decision,
    );
    if (probe.body.data?.policy?.matchedRule !== 'rest') {
      throw new Error(`the decision answered ${JSON.stringify(probe.body)}`);
    }
    const loads: Record<string, HttpLoadOptions> = {
      check: {
        url: `${api.base}/api/budgets/${check}/check`,
        method: 'POST',
        body: JSON.stringify({ amount: '1' }),
        connections: 50,
      },
      decision: { url: `${api.base}/api/decisions`, method: 'POST', body: JSON.stringify(decision), connections: 50 },
    };
    const measured = Object.entries(loads).filter(([name]) => only === undefined || name === only);
    if (measured.length === 0) throw new Error(`no load named ${only}: check or decision`);
    for (const [, load] of measured) await httpLoad({ ...load, durationSec: 3 }, false);
    for (let round = 1; round <= rounds; round++) {
      for (const [name, load] of measured) {
        const meter = cpuMeter(() => ({ api: [api.proc.pid] }));
        const result = await httpLoad({ ...load, durationSec: seconds });
        const cpu = meter.stop();
        const micros = (cores: number | undefined) =>
          cores === undefined || result.rps === 0 ? '?' : ((cores / result.rps) * 1e6).toFixed(1);
        console.log(
          `round ${round} ${name.padEnd(8)} ${Math.round(result.rps)} req/s, p50 ${result.latency.p50} ms, ` +
            `API ${micros(cpu.api)} µs and PostgreSQL ${micros(cpu.postgres)} µs of CPU a request, ` +
            `machine ${cpu.machine?.toFixed(2)} cores, waiting for a CPU ${cpu.waiting?.toFixed(2)}` +
            (result.non2xx || result.errors ? `, ${result.non2xx} non-2xx and ${result.errors} errors` : ''),
        );
      }
    }
    // Each store statement commits alone, so the transaction ids count the statements.
    const stored = await sql<{ decisions: number; statements: number }>`
      SELECT count(*)::int AS decisions, count(DISTINCT xmin::text)::int AS statements FROM decisions`.execute(
      database.db,
    );
    const row = stored.rows[0];
    if (row) {
      console.log(
        `${row.decisions} decisions stored by ${row.statements} statements (${(row.decisions / row.statements).toFixed(1)} each)`,
      );
    }
  } finally {
    await database.close();
  }
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
