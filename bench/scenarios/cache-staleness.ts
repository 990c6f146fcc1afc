import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dayStart, monthStart } from '@vouch/core';
import { paced } from '../lib/closed-loop.ts';
import { type Context, call, type RunningApi, startApi, withCpu } from '../lib/context.ts';
import { httpLoad } from '../lib/http-load.ts';
import { pacedClient } from '../lib/http-paced.ts';
import { LatencyRecorder, round } from '../lib/stats.ts';

/** Agents written and read: many, so that a key is written again only seconds later and each drop matches one write. */
const KEYS = 1000;
/** Writes per second through the writer, one at a time, alternating a budget's limits and a score. */
const WRITE_RATE = 100;
/** The full profile's phase of writes with the reader idle. */
const IDLE_SECONDS = 5;

interface Drop {
  ns: bigint;
  source: string;
}

/** A trace of bench/lib/cache-trace.mjs: drops by `<space>:<key>`, in time order. */
function readTrace(file: string): Map<string, Drop[]> {
  const drops = new Map<string, Drop[]>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return drops;
  }
  for (const line of text.split('\n')) {
    const [ns, source, space, key] = line.split(' ');
    if (!ns || !source || !space || !key) continue;
    const id = `${space}:${key}`;
    const list = drops.get(id) ?? [];
    if (!list.length) drops.set(id, list);
    list.push({ ns: BigInt(ns), source });
  }
  for (const list of drops.values()) list.sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
  return drops;
}

interface Write {
  id: string;
  sent: bigint;
  answered: bigint;
}

interface Matched {
  /** The writer's own drop (its commit acknowledged) and the reader's drop (the notification handled). */
  own: bigint;
  other: bigint;
}

/**
 * Each write's two drops: the writer's, between the request and the answer; the reader's, after
 * the request was sent and before the same key's next write (keys are written seconds apart).
 */
function match(writes: Write[], writerDrops: Map<string, Drop[]>, readerDrops: Map<string, Drop[]>) {
  const found = new Map<Write, Matched>();
  const nextSent = new Map<string, bigint>();
  for (let i = writes.length - 1; i >= 0; i--) {
    const write = writes[i] as Write;
    const until = nextSent.get(write.id);
    nextSent.set(write.id, write.sent);
    const own = writerDrops
      .get(write.id)
      ?.find((d) => d.source === 'write' && d.ns >= write.sent && d.ns <= write.answered);
    const other = readerDrops
      .get(write.id)
      ?.find((d) => d.source === 'notification' && d.ns >= write.sent && (until === undefined || d.ns < until));
    if (own && other) found.set(write, { own: own.ns, other: other.ns });
  }
  return found;
}

/** The figures of one phase of writes. */
function summarize(
  phase: { writes: Write[]; elapsedSec: number; cpu: Record<string, number> },
  matched: Map<Write, Matched>,
) {
  const latency = new LatencyRecorder();
  const staleness = new LatencyRecorder();
  const sentToReaderDrop = new LatencyRecorder();
  const writerDropToAnswer = new LatencyRecorder();
  let readerFirst = 0;
  for (const write of phase.writes) {
    latency.record(ms(write.answered - write.sent));
    const m = matched.get(write);
    if (!m) continue;
    staleness.record(ms(m.other - m.own));
    sentToReaderDrop.record(ms(m.other - write.sent));
    writerDropToAnswer.record(ms(write.answered - m.own));
    if (m.other < m.own) readerFirst++;
  }
  return {
    writes: {
      count: phase.writes.length,
      ratePerSec: WRITE_RATE,
      achievedPerSec: round(phase.writes.length / phase.elapsedSec, 1),
      elapsedSec: phase.elapsedSec,
      /** Each write's round trip from the harness. */
      latency: latency.summary(),
    },
    /** Per write, reader's drop − writer's drop, ms: a lower bound of the window (see `method`). */
    staleness: staleness.summary(),
    matched: staleness.count,
    unmatched: phase.writes.length - staleness.count,
    /** Writes whose notification the reader handled before the writer had its commit's acknowledgement (negative staleness). */
    readerBeforeWriter: readerFirst,
    /** From the harness sending the write (before its commit) to the reader's drop: an upper bound of the window. */
    sentToReaderDrop: sentToReaderDrop.summary(),
    /** From the writer's drop to the harness receiving the write's answer: the rest of the write. */
    writerDropToAnswer: writerDropToAnswer.summary(),
    cpu: phase.cpu,
  };
}

const now = () => process.hrtime.bigint();
const ms = (ns: bigint) => Number(ns) / 1e6;

/**
 * X-cache-staleness (no goal): how long after a write's commit another API process still holds
 * the old entry in its read cache (docs/cache.md). Two API processes on the run's database: the
 * writer takes `POST /api/budgets/:a/set` and `POST /api/agents/:a/score`, paced, one at a time,
 * over KEYS agents; the reader serves `GET /api/agents/:a/score` and `POST /api/budgets/:a/check`
 * of the same agents from its cache under load (autocannon, the profile's connections, as fast as
 * it answers). Both processes record every drop of their cache (bench/lib/cache-trace.mjs) on
 * CLOCK_MONOTONIC, which all processes of the machine share: the writer's drop of its own entry,
 * which it makes as soon as PostgreSQL has acknowledged the commit and before it answers, and the
 * reader's drop when the notification reaches it. Staleness = reader's drop − writer's drop.
 */
export async function runCacheStaleness(ctx: Context) {
  const { profile } = ctx;
  const keys = ctx.agents.slice(100, 100 + KEYS);
  if (keys.length < KEYS) throw new Error(`X-cache-staleness needs ${100 + KEYS} seeded agents`);
  const traces = { writer: join(ctx.logDir, 'cache-writer.trace'), reader: join(ctx.logDir, 'cache-reader.trace') };
  let writer: RunningApi | null = null;
  let reader: RunningApi | null = null;
  const client = { current: null as ReturnType<typeof pacedClient> | null };
  try {
    [writer, reader] = await Promise.all([
      startApi(ctx, 'api-cache-writer', { rateLimit: 'off', cacheTrace: traces.writer }),
      startApi(ctx, 'api-cache-reader', { rateLimit: 'off', cacheTrace: traces.reader }),
    ]);
    ctx.pids.api = [reader.proc.pid];
    ctx.pids.writer = [writer.proc.pid];
    // Every agent gets a budget (one statement; the reader caches a budget row for each).
    const at = new Date();
    await ctx.database.db
      .insertInto('budgets')
      .values(
        keys.map((agent) => ({
          // The benchmark's API runs with AUTH off: its requests act in the default organization.
          organization_id: 'default',
          agent,
          daily_limit: '1000000',
          monthly_limit: '1000000',
          per_tx_limit: '1000000',
          daily_spent: '0',
          monthly_spent: '0',
          day_start: dayStart(at),
          month_start: monthStart(at),
          created_at: at,
          updated_at: at,
        })),
      )
      .onConflict((oc) => oc.columns(['organization_id', 'agent', 'asset']).doNothing())
      .execute();
    const readSequence = keys.flatMap((a) => [
      { method: 'GET' as const, path: `/api/agents/${a}/score` },
      { method: 'POST' as const, path: `/api/budgets/${a}/check`, body: '{"amount":"1"}' },
    ]);
    const loadSec = profile.warmupSec + profile.durationSec + 1;
    const load = httpLoad({
      url: reader.base,
      requests: readSequence,
      connections: profile.connections,
      durationSec: loadSec,
    });
    // Writes start once the reader has been under load for the warm-up.
    await new Promise((resolve) => setTimeout(resolve, profile.warmupSec * 1000));

    client.current = pacedClient(writer.base);
    const http = client.current;
    const scores = new Map<string, number>();
    const writes: Write[] = [];
    let sequence = 0;
    /** Paced writes for `seconds` (those that run late stop with the time); returns the phase's. */
    const writeFor = async (seconds: number) => {
      const phase: Write[] = [];
      const deadline = performance.now() + seconds * 1000;
      const op = async () => {
        if (performance.now() > deadline) return;
        const i = sequence++;
        const agent = keys[i % keys.length] as string;
        let res: { status: number; body: string };
        let id: string;
        const sent = now();
        if (i % 2 === 0) {
          id = `budgets:${agent}`;
          res = await http.post(`/api/budgets/${agent}/set`, { dailyLimit: String(2_000_000 + i) });
        } else {
          id = `agents:${agent}`;
          const score = ((scores.get(agent) ?? 488) + 1) % 1001; // always a change
          scores.set(agent, score);
          res = await http.post(`/api/agents/${agent}/score`, { score, reason: '0x' });
        }
        phase.push({ id, sent, answered: now() });
        if (res.status !== 200) throw new Error(`write ${id} answered ${res.status}: ${res.body.slice(0, 200)}`);
      };
      const { result, cpu } = await withCpu(ctx, () =>
        paced({ ratePerSec: WRITE_RATE, count: WRITE_RATE * seconds, op }),
      );
      if (result.errors)
        throw new Error(`X-cache-staleness: ${result.errors} writes failed, first: ${result.firstError}`);
      writes.push(...phase);
      return { writes: phase, elapsedSec: result.elapsedSec, cpu };
    };

    const loaded = await writeFor(profile.durationSec);
    const readLoad = await load;
    // The full profile also times the same writes with the reader idle: the notification's own path.
    const idle = profile.name === 'full' ? await writeFor(IDLE_SECONDS) : null;

    // The last written score of a few agents, read from the reader's cache now: every drop arrived.
    const sample = [...scores].slice(0, 50);
    let staleAfter = 0;
    for (const [agent, score] of sample) {
      const res = await call<{ data: { score: number } }>(reader.base, 'GET', `/api/agents/${agent}/score`);
      if (res.body.data.score !== score) staleAfter++;
    }

    // Both processes write their traces as they exit.
    await Promise.all([writer.proc.stop(), reader.proc.stop()]);
    const matched = match(writes, readTrace(traces.writer), readTrace(traces.reader));
    const reads = readLoad.ok / readLoad.elapsedSec;
    return {
      what: `commit → another API process's cache drop, per write: ${WRITE_RATE} writes/s through one API (budget limits and scores alternating, one at a time, over ${KEYS} agents) while a second API serves cached score reads and budget checks of the same agents on ${profile.connections} connections`,
      method:
        'CLOCK_MONOTONIC (process.hrtime.bigint, one clock for every process of the machine) read in both API processes where the read cache drops an entry (node:diagnostics_channel vouch:cache:invalidate, bench/lib/cache-trace.mjs): the writer drops its own entry right after it received the acknowledgement of its commit, the reader when the notification reaches it. The acknowledgement reaches the writer after the commit, so per write the true window is at least `staleness` and at most `sentToReaderDrop` (from the harness sending the write)',
      ...summarize(loaded, matched),
      readLoad: {
        connections: profile.connections,
        rps: Math.round(reads),
        statusCodes: readLoad.statusCodes,
        errors: readLoad.errors,
        latency: readLoad.latency,
      },
      idleReader: idle ? summarize(idle, matched) : null,
      staleAfterRun: { sampled: sample.length, stale: staleAfter },
    };
  } finally {
    client.current?.close();
    delete ctx.pids.writer;
    await Promise.all([writer?.proc.stop(), reader?.proc.stop()]);
  }
}
