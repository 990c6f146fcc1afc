/**
 * Vouch benchmark harness: `npm run bench` (full, < 15 min) or `npm run bench -- --quick` (< 3 min).
 * Starts the service on PostgreSQL + Redis in a database and key prefix of its own, seeds it,
 * measures the scenarios P1–P7 and the baselines B1–B7 in the same run, prints a table and
 * writes bench/results/latest.json. See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, sql } from '@vouch/db';
import { seedScoredAgents } from '@vouch/testkit';
import { runB1 } from './baselines/b1.ts';
import { runB2 } from './baselines/b2.ts';
import { runB3 } from './baselines/b3.ts';
import { runB5 } from './baselines/b5.ts';
import { runB7 } from './baselines/b7.ts';
import { cleanup, installSignalHandlers, onCleanup } from './lib/cleanup.ts';
import { type Context, call, type RunningApi, startApi, startWorker } from './lib/context.ts';
import { setOwnPostgres } from './lib/cpu.ts';
import { P8_POLICY } from './lib/decide.ts';
import { evaluateGoals } from './lib/evaluate.ts';
import {
  benchPrefix,
  checkPostgres,
  checkRedis,
  createBenchDatabase,
  REDIS_URL,
  redact,
  SetupError,
} from './lib/infra.ts';
import { machineInfo } from './lib/machine.ts';
import type { Child } from './lib/procs.ts';
import { type Profile, productSettings, profiles } from './lib/profile.ts';
import { NOISE_CORES, waitForQuiet } from './lib/quiet.ts';
import { goalsTable, table, writeJson } from './lib/report.ts';
import { summaryLine } from './lib/summary.ts';
import { runCacheStaleness } from './scenarios/cache-staleness.ts';
import { runCommitHop, runHop, runHttpHop } from './scenarios/hops.ts';
import { runEventsOnOff, runHealth, runP1, runP2, runP3, runP4, runP8 } from './scenarios/http.ts';
import { joinHalves, runRecompute } from './scenarios/recompute.ts';
import { runSpendDirect } from './scenarios/spend-direct.ts';
import { runVerifyDirect } from './scenarios/verify-direct.ts';

const args = process.argv.slice(2);
const unknown = args.filter((a) => !['--quick', '--full', '--strict', '--no-wait', '--help', '-h'].includes(a));
if (args.includes('--help') || args.includes('-h') || unknown.length) {
  console.log(`usage: npm run bench [-- --quick] [-- --strict]
  --quick   the short profile (< 3 min); default is the full one (< 15 min)
  --strict  exit 1 when a goal's floor fails (default: exit 1 only when the harness itself fails)
  --no-wait do not wait for other processes on the machine to go quiet before each scenario
env: BENCH_DATABASE_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
     BENCH_REDIS_URL (default redis://127.0.0.1:6379), BENCH_DB_POOL_MAX, BENCH_WORKER_CONCURRENCY,
     BENCH_RECOMPUTE_CONCURRENCY (recomputation chunks at once per worker; default 1, the product's),
     BENCH_BURST_WARMUP (back-to-back operations before each paced scenario's paced warm-up; default 2000)`);
  process.exit(unknown.length ? 2 : 0);
}
const profile: Profile = args.includes('--quick') ? profiles.quick : profiles.full;
const RESULTS = new URL('./results/latest.json', import.meta.url).pathname;

/** The commit the run measured, `+changes` when the work tree differs from it. */
function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim();
    return dirty ? `${sha}+changes` : sha;
  } catch {
    return 'unknown';
  }
}
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
const log = (message: string) => console.log(`[bench ${elapsed()}] ${message}`);

installSignalHandlers();

/** How long the whole run may wait for other processes on the machine to calm down (see quiet.ts). */
const quietBudget = { remainingMs: args.includes('--no-wait') ? 0 : profile.name === 'quick' ? 15_000 : 240_000 };

async function step<T extends object>(ctx: Context, id: string, fn: () => Promise<T>): Promise<T | null> {
  if (profile.skipped.includes(id)) return null;
  const machine = await waitForQuiet(ctx, quietBudget);
  log(
    `${id} …${machine.waitedSec ? ` (waited ${machine.waitedSec} s for other processes to calm down)` : ''}${
      machine.otherCoresBefore > NOISE_CORES ? ` (machine busy: ${machine.otherCoresBefore} cores used by others)` : ''
    }`,
  );
  try {
    const result = { ...(await fn()), machineBefore: machine };
    ctx.scenarios[id] = result as Record<string, unknown>;
    log(`${id}: ${summaryLine(result as Record<string, unknown>)}`);
    return result;
  } catch (error) {
    const message = (error as Error).message;
    ctx.errors[id] = message;
    log(`${id} FAILED: ${message}`);
    return null;
  }
}

async function main() {
  log(
    `profile ${profile.name}: warm-up ${profile.warmupSec} s, ${profile.durationSec} s per load test, ${profile.connections} connections`,
  );
  const [postgres, redisVersion] = await Promise.all([checkPostgres(), checkRedis()]);
  const machine = machineInfo(postgres, redisVersion);
  const logDir = mkdtempSync(join(tmpdir(), 'vouch-bench-'));
  const { name: dbName, url: dbUrl } = await createBenchDatabase();
  const prefix = benchPrefix();
  log(`database ${dbName}, Redis prefix ${prefix}, process logs in ${logDir}`);

  // The API (rate limiter off) migrates the fresh database and loads the bundled sanctions list.
  const partial = { profile, logDir, dbName, dbUrl, prefix, scenarios: {}, errors: {}, pids: {}, envs: {} };
  let apiA: RunningApi | null = await startApi(partial as unknown as Context, 'api-ratelimit-off', {
    rateLimit: 'off',
  });
  const database = createDatabase({ databaseUrl: dbUrl, poolMax: 4, applicationName: 'vouch-bench-harness' });
  onCleanup('close the harness database pool', () => database.close());
  // CPU attribution: this run's PostgreSQL processes vs other databases' and other servers'.
  const backend = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(database.db);
  setOwnPostgres(backend.rows[0]?.pid ?? 0, dbName);
  const t0 = performance.now();
  const agents = await seedScoredAgents(database.db, profile.agents);
  log(`seeded ${agents.length} agents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const pick = (i: number) => agents[i] as string;
  const ctx: Context = {
    ...partial,
    database,
    agents,
    roles: {
      score: pick(0),
      check: pick(1),
      spendHttp: pick(2),
      spendSql: pick(3),
      exhaust: pick(4),
      verify: pick(5),
      decide: pick(6),
      spendEventsOn: pick(7),
      spendEventsOff: pick(8),
    },
    pids: { api: [apiA.proc.pid] },
  };
  const huge = (10n ** 30n).toString();
  const setBudget = (agent: string, limit: string) =>
    call(apiA?.base ?? '', 'POST', `/api/budgets/${agent}/set`, { dailyLimit: limit, monthlyLimit: limit });
  await setBudget(ctx.roles.check, huge);
  await setBudget(ctx.roles.spendHttp, huge);
  await setBudget(ctx.roles.spendSql, huge);
  await setBudget(ctx.roles.exhaust, String(profile.exhaustLimit));
  await setBudget(ctx.roles.decide, huge);
  await call(apiA.base, 'PUT', `/api/agents/${ctx.roles.decide}/policy`, P8_POLICY);
  await setBudget(ctx.roles.spendEventsOn, huge);
  await setBudget(ctx.roles.spendEventsOff, huge);

  const C = profile.connections;
  const pool = productSettings.dbPoolMax;
  await step(ctx, 'B1', () => runB1(ctx));
  await step(ctx, 'P1', () => runP1(ctx, apiA as RunningApi));
  await step(ctx, 'B2', () => runB2(ctx, C));
  if (pool !== C) await step(ctx, 'X-B2-pool', () => runB2(ctx, pool));
  await step(ctx, 'X-health', () => runHealth(ctx, apiA as RunningApi));

  // Recomputation: B7 in its own process, then P5 with one worker and P6 with two.
  let worker1: Child | null = null;
  try {
    worker1 = await startWorker(ctx, 'worker-1');
    ctx.pids.worker1 = [worker1.pid];
  } catch (error) {
    ctx.errors.worker = (error as Error).message;
    log(`worker start FAILED: ${(error as Error).message}`);
  }
  await step(ctx, 'B7', () => runB7(ctx));
  if (worker1) {
    const before = await step(ctx, 'P5', () => runRecompute(ctx, apiA as RunningApi, 1));
    await step(ctx, 'P6', async () => {
      const worker2 = await startWorker(ctx, 'worker-2');
      ctx.pids.worker2 = [worker2.pid];
      try {
        return await runRecompute(ctx, apiA as RunningApi, 2);
      } finally {
        delete ctx.pids.worker2;
        await worker2.stop();
      }
    });
    // P5's second half, worker-2 gone: P6 sits between the halves (joinHalves).
    if (before) {
      await step(ctx, 'P5', async () => joinHalves(before, await runRecompute(ctx, apiA as RunningApi, 1, 0)));
    }
  }

  // Queued checks: B5 (raw BullMQ) and P4 (POST /api/verify through worker-1).
  await step(ctx, 'B5', () => runB5(ctx));
  if (worker1) await step(ctx, 'P4', () => runP4(ctx, apiA as RunningApi));
  await step(ctx, 'X-verify-direct', () => runVerifyDirect(ctx));
  await step(ctx, 'X-hop-postgres', () => runHop(ctx, 'postgres'));
  await step(ctx, 'X-commit-postgres', () => runCommitHop(ctx));
  await step(ctx, 'X-hop-redis', () => runHop(ctx, 'redis'));
  await step(ctx, 'X-hop-http', () => runHttpHop(ctx, apiA as RunningApi));
  if (worker1) {
    delete ctx.pids.worker1;
    await worker1.stop();
  }

  // Spends on a hot budget: B3 (plain SQL), then P3 over HTTP.
  await step(ctx, 'B3', () => runB3(ctx, C));
  if (pool !== C) await step(ctx, 'X-B3-pool', () => runB3(ctx, pool));
  await step(ctx, 'X-B3-serial', () => runB3(ctx, 1, 1));
  await step(ctx, 'P3', () => runP3(ctx, apiA as RunningApi));
  // P9: the same spends on two more APIs alike but for EVENTS (on: every spend writes its event
  // in its statement), loaded in turn.
  await step(ctx, 'P9', async () => {
    const on = await startApi(ctx, 'api-events-on', { rateLimit: 'off', events: 'on' });
    const off = await startApi(ctx, 'api-events-off', { rateLimit: 'off', events: 'off' }).catch(async (error) => {
      await on.proc.stop();
      throw error;
    });
    ctx.pids.api = [on.proc.pid, off.proc.pid];
    // The first API stays up, idle but for its read cache's notifications: this run's, not interference.
    ctx.pids['api-idle'] = [(apiA as RunningApi).proc.pid];
    try {
      return await runEventsOnOff(ctx, { on, off });
    } finally {
      delete ctx.pids['api-idle'];
      ctx.pids.api = [(apiA as RunningApi).proc.pid];
      await on.proc.stop();
      await off.proc.stop();
    }
  });

  await step(ctx, 'X-spend-direct', () => runSpendDirect(ctx));

  // Budget checks: without the limiter on this API (extra), then P2 on an API with the limiter on.
  await step(ctx, 'X-P2-ratelimit-off', () => runP2(ctx, apiA as RunningApi, 'X-P2-ratelimit-off'));
  // Decisions on the same API, right after the checks they are compared with (P8).
  await step(ctx, 'P8', () => runP8(ctx, apiA as RunningApi));
  await apiA.proc.stop();
  apiA = null;
  await step(ctx, 'P2', async () => {
    const apiB = await startApi(ctx, 'api-ratelimit-on', { rateLimit: 'on' });
    ctx.pids.api = [apiB.proc.pid];
    try {
      return await runP2(ctx, apiB, 'P2');
    } finally {
      await apiB.proc.stop();
    }
  });
  // Extra: P2's route with every answer written as soon as it is ready (COALESCE_WRITES=off).
  await step(ctx, 'X-P2-uncoalesced', async () => {
    const apiC = await startApi(ctx, 'api-uncoalesced', { rateLimit: 'on', coalesceWrites: 'off' });
    ctx.pids.api = [apiC.proc.pid];
    try {
      return await runP2(ctx, apiC, 'X-P2-uncoalesced');
    } finally {
      await apiC.proc.stop();
    }
  });

  // Extra: how long another API process's read cache serves an entry after its write committed.
  await step(ctx, 'X-cache-staleness', () => runCacheStaleness(ctx));

  const goals = evaluateGoals(ctx);
  const report = {
    generatedAt: new Date().toISOString(),
    command: `npm run bench${profile.name === 'quick' ? ' -- --quick' : ''}`,
    profile: profile.name,
    harnessSeconds: Math.round((Date.now() - started) / 1000),
    machine,
    settings: {
      warmupSec: profile.warmupSec,
      durationSec: profile.durationSec,
      agents: profile.agents,
      recomputeWarmupRuns: profile.recomputeWarmup,
      recomputeTimedRuns: profile.recomputeReps,
      pacedRatePerSec: profile.pacedRate,
      pacedBurstWarmup: profile.burstWarmup,
      pacedWarmup: profile.pacedWarmup,
      pacedRequests: profile.pacedCount,
      skippedScenarios: profile.skipped,
      redisUrl: redact(REDIS_URL),
      nodeEnv: 'production',
      auth: 'off',
    },
    pools: {
      apiDbPoolMax: productSettings.dbPoolMax,
      workerDbPoolMax: productSettings.dbPoolMax,
      workerConcurrency: productSettings.workerConcurrency,
      recomputeConcurrency: productSettings.recomputeConcurrency,
      recomputeChunkSize: productSettings.recomputeChunkSize,
      b2PgPoolMax: C,
      b3PgPoolMax: C,
      b7DbPoolMax: productSettings.dbPoolMax,
    },
    connections: {
      B1: C,
      P1: C,
      B2: C,
      P2: C,
      B3: C,
      P3: C,
      P8: C,
      P9: `${C}, one API at a time`,
      P4: 1,
      B5: 1,
      'X-health': C,
      'X-B2-pool': pool !== C ? `${C} loops on a pool of ${pool}` : undefined,
      'X-B3-pool': pool !== C ? `${C} loops on a pool of ${pool}` : undefined,
      'X-B3-serial': '1 loop on a pool of 1',
      'X-verify-direct': `1 at a time, alternating between two pools of ${pool}`,
      'X-spend-direct': `1 at a time, alternating between two runtimes on a pool of ${pool}`,
      'X-hop-postgres': 1,
      'X-commit-postgres': 1,
      'X-hop-redis': 1,
      'X-hop-http': 1,
      'X-P2-uncoalesced': C,
      'X-cache-staleness': `${C} on the reader; writes one at a time on the writer`,
    },
    /** What each Vouch process was started with (unset keys take the product's defaults). */
    processEnv: Object.fromEntries(
      Object.entries(ctx.envs).map(([name, env]) => [
        name,
        Object.fromEntries(Object.entries(env).map(([k, v]) => [k, k.endsWith('_URL') ? redact(v) : v])),
      ]),
    ),
    goals,
    scenarios: ctx.scenarios,
    errors: ctx.errors,
  };
  writeJson(RESULTS, report);
  // The run's goals, kept in the repository's history (bench/results/history/, one file a run).
  const commit = gitCommit();
  writeJson(
    new URL(`./results/history/${report.generatedAt.replace(/[:.]/g, '-')}-${profile.name}.json`, import.meta.url)
      .pathname,
    {
      generatedAt: report.generatedAt,
      commit,
      profile: profile.name,
      machine: report.machine,
      goals: goals.map((g) => ({
        id: g.id,
        subject: g.subject?.text,
        baseline: g.baseline ? `${g.baseline.id} ${g.baseline.text}` : null,
        ratio: g.ratio,
        pass: g.pass,
        targetMet: g.targetMet,
        noisy: g.noisy,
      })),
    },
  );

  console.log(
    `\nVouch benchmark — ${profile.name} profile — ${machine.cpus} × ${machine.cpuModel}, ${machine.totalMemoryGiB} GiB, Node ${machine.node}, PostgreSQL ${postgres.version.split(' ')[1]}, Redis ${redisVersion}`,
  );
  console.log(
    `API and workers: DB_POOL_MAX=${productSettings.dbPoolMax}, WORKER_CONCURRENCY=${productSettings.workerConcurrency}, WORKER_CONCURRENCY_RECOMPUTE=${productSettings.recomputeConcurrency}; load: ${C} connections, B2/B3 pg pool ${C}\n`,
  );
  console.log(goalsTable(goals));
  if (goals.some((g) => g.noisy)) {
    console.log(
      `⚠ noisy: during a measurement this goal uses, processes outside the run used more than ${NOISE_CORES} cores (see "interference" in the JSON); rerun on a quiet machine.`,
    );
  }
  console.log('');
  console.log(
    table(
      ['scenario', 'figure'],
      Object.entries(ctx.scenarios).map(([id, s]) => [id, summaryLine(s)]),
    ),
  );
  for (const [id, message] of Object.entries(ctx.errors)) console.log(`\n${id} failed: ${message}`);
  const failed = goals.filter((g) => !g.pass).map((g) => g.id);
  console.log(
    `\n${goals.length - failed.length}/${goals.length} floors pass${failed.length ? ` (failing: ${failed.join(', ')})` : ''}; results in ${RESULTS} (${elapsed().trim()})`,
  );
  const harnessFailed = Object.keys(ctx.errors).length > 0;
  if (!harnessFailed) onCleanup('remove process logs', () => rmSync(logDir, { recursive: true, force: true }));
  else console.log(`process logs kept in ${logDir}`);
  return harnessFailed ? 1 : args.includes('--strict') && failed.length ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(`\n[bench] ${error instanceof SetupError ? error.message : ((error as Error).stack ?? error)}`);
} finally {
  await cleanup();
}
process.exit(code);
