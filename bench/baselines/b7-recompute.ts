/**
 * B7: the score recomputation of every agent in one process, without the queue:
 * packages/core's `scores.allAddresses()` then `scores.recompute(addresses)` (the
 * function each chunk job calls) over all of them in one call. Also times the same
 * work in sequential chunks of RECOMPUTE_CHUNK_SIZE (what one worker with
 * concurrency 1 would do), for information. Scores are reset to 0 before every run.
 *
 * Env: DATABASE_URL, DB_POOL_MAX, B7_WARMUP, B7_REPS, B7_OUT (result file), RECOMPUTE_CHUNK_SIZE.
 */
import { writeFileSync } from 'node:fs';
import { createServices } from '@vouch/core';
import { createDatabase, sql } from '@vouch/db';
import { cpuMeter, setOwnPostgres } from '../lib/cpu.ts';
import { envVar } from '../lib/env.ts';
import { agentCount, resetScores } from '../lib/recompute.ts';

const database = createDatabase({
  databaseUrl: envVar('DATABASE_URL'),
  poolMax: Number(envVar('DB_POOL_MAX') ?? 10),
  applicationName: 'vouch-bench-b7',
});
const services = createServices({ db: database.db });
const warmup = Number(envVar('B7_WARMUP') ?? 1);
const reps = Number(envVar('B7_REPS') ?? 1);
const chunkSize = Number(envVar('RECOMPUTE_CHUNK_SIZE') ?? 250);
const expected = await agentCount(database.db);
const backend = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(database.db);
setOwnPostgres(backend.rows[0]?.pid ?? 0, new URL(envVar('DATABASE_URL') ?? 'postgres://x/x').pathname.slice(1));

async function oneCall() {
  await resetScores(database.db);
  const t0 = performance.now();
  const addresses = await services.scores.allAddresses();
  const r = await services.scores.recompute(addresses, null);
  const ms = performance.now() - t0;
  if (r.updated !== expected) throw new Error(`B7 updated ${r.updated} of ${expected} agents`);
  return ms;
}

async function chunked() {
  await resetScores(database.db);
  const t0 = performance.now();
  const addresses = await services.scores.allAddresses();
  let updated = 0;
  for (let i = 0; i < addresses.length; i += chunkSize) {
    updated += (await services.scores.recompute(addresses.slice(i, i + chunkSize), null)).updated;
  }
  const ms = performance.now() - t0;
  if (updated !== expected) throw new Error(`B7 (chunked) updated ${updated} of ${expected} agents`);
  return ms;
}

try {
  for (let i = 0; i < warmup; i++) await oneCall();
  const runsMs: number[] = [];
  // CPU over the timed runs (resets included); "harness" is this process.
  const meter = cpuMeter(() => ({}));
  for (let i = 0; i < reps; i++) runsMs.push(await oneCall());
  const { harness, ...rest } = meter.stop();
  const cpu = { b7: harness ?? 0, ...rest };
  const chunkedMs = [await chunked()];
  const out = { agents: expected, runsMs, chunkedMs, chunkSize, rssBytes: process.memoryUsage().rss, cpu };
  const file = envVar('B7_OUT');
  if (file) writeFileSync(file, JSON.stringify(out));
  else console.log(JSON.stringify(out));
} finally {
  await database.close();
}
