/**
 * B7: the score recomputation of every agent in one process, without the queue:
 * packages/core's `scores.allAddresses()` then `scores.recompute(addresses)` (the
 * function each chunk job calls) over all of them in one call. Also times the same
 * work in chunks of RECOMPUTE_CHUNK_SIZE, one at a time (what one worker with
 * concurrency 1 would do) and two at a time (two such workers, without the queue), for
 * information. Scores are reset to 0 before every run.
 *
 * Env: DATABASE_URL, DB_POOL_MAX, B7_WARMUP, B7_REPS, B7_OUT (result file); chunks of the product's RECOMPUTE_CHUNK_SIZE.
 */
import { writeFileSync } from 'node:fs';
import { createDatabase, sql } from '@vouch/db';
import { agentCount, createTestRuntime, resetScores } from '@vouch/testkit';
import { cpuMeter, setOwnPostgres } from '../lib/cpu.ts';
import { envVar } from '../lib/env.ts';
import { productSettings } from '../lib/profile.ts';

const database = createDatabase({
  databaseUrl: envVar('DATABASE_URL'),
  poolMax: Number(envVar('DB_POOL_MAX') ?? 10),
  applicationName: 'vouch-bench-b7',
});
const { services } = await createTestRuntime(database, { migrate: false, loadSanctions: false });
const warmup = Number(envVar('B7_WARMUP') ?? 1);
const reps = Number(envVar('B7_REPS') ?? 1);
const chunkSize = productSettings.recomputeChunkSize;
const expected = await agentCount(database.db);
const backend = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(database.db);
setOwnPostgres(backend.rows[0]?.pid ?? 0, new URL(envVar('DATABASE_URL') ?? 'postgres://x/x').pathname.slice(1));

async function oneCall() {
  await resetScores(database.db, { vacuum: true });
  const t0 = performance.now();
  const addresses = await services.scores.allAddresses();
  const r = await services.scores.recompute(addresses, null);
  const ms = performance.now() - t0;
  if (r.updated !== expected) throw new Error(`B7 updated ${r.updated} of ${expected} agents`);
  return ms;
}

/** The same in chunks of RECOMPUTE_CHUNK_SIZE, `atOnce` chunks at a time (a worker with that concurrency, without the queue). */
async function chunked(atOnce: number) {
  await resetScores(database.db, { vacuum: true });
  const t0 = performance.now();
  const addresses = await services.scores.allAddresses();
  let next = 0;
  let updated = 0;
  const loop = async () => {
    for (let i = next; i < addresses.length; i = next) {
      next += chunkSize;
      // Not `updated += await …`: that reads `updated` before the other loop adds to it.
      const done = await services.scores.recompute(addresses.slice(i, i + chunkSize), null);
      updated += done.updated;
    }
  };
  await Promise.all(Array.from({ length: atOnce }, loop));
  const ms = performance.now() - t0;
  if (updated !== expected) throw new Error(`B7 (chunked, ${atOnce} at once) updated ${updated} of ${expected} agents`);
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
  // Alternating one and two chunks at a time, after one untimed run of each.
  await chunked(1);
  await chunked(2);
  const chunkedMs: number[] = [];
  const twoAtOnceMs: number[] = [];
  for (let i = 0; i < reps; i++) {
    chunkedMs.push(await chunked(1));
    twoAtOnceMs.push(await chunked(2));
  }
  const out = { agents: expected, runsMs, chunkedMs, twoAtOnceMs, chunkSize, rssBytes: process.memoryUsage().rss, cpu };
  const file = envVar('B7_OUT');
  if (file) writeFileSync(file, JSON.stringify(out));
  else console.log(JSON.stringify(out));
} finally {
  await database.close();
}
