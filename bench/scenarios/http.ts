import { sql } from '@vouch/db';
import { jobs } from '@vouch/jobs';
import { type Context, call, type RunningApi, withCpu } from '../lib/context.ts';
import { p8Decision } from '../lib/decide.ts';
import { httpLoad } from '../lib/http-load.ts';
import { pacedClient } from '../lib/http-paced.ts';
import { pacedJobRoundTrips } from '../lib/job-phases.ts';
import { loadTest } from '../lib/load-test.ts';
import { memoryOf, sampleRss } from '../lib/procs.ts';

const MB = 2 ** 20;

/** Whether the API answered with rate-limit headers (i.e. the limiter is really on), and its limit. */
function limiterSeen(headers: Headers): string {
  const limit = headers.get('x-ratelimit-limit');
  return limit ? `on (x-ratelimit-limit: ${limit})` : 'off (no rate-limit headers)';
}

/** P1 (+ P7): GET /api/agents/:address/score on one agent, API RSS sampled throughout (warm-up included). */
export async function runP1(ctx: Context, api: RunningApi) {
  const path = `/api/agents/${ctx.roles.score}/score`;
  const probe = await call<{ data: { score: number } }>(api.base, 'GET', path);
  const idle = memoryOf(api.proc.pid);
  const sampler = sampleRss(api.proc.pid);
  const r = await loadTest(ctx, 'P1', { url: `${api.base}${path}`, connections: ctx.profile.connections });
  const mem = sampler.stop();
  return {
    what: 'GET /api/agents/:address/score (one hot agent), API with VOUCH_ROLE=api, RATE_LIMIT=off',
    path,
    sampleAnswer: probe.body,
    rateLimiter: limiterSeen(probe.headers),
    ...r,
    memory: {
      idleRssMB: idle ? Math.round(idle.rss / MB) : null,
      peakRssMB: Math.round((mem.peakRssBytes / MB) * 10) / 10,
      endRssMB: mem.endRssBytes ? Math.round(mem.endRssBytes / MB) : null,
      vmHwmMB: mem.vmHwmBytes ? Math.round(mem.vmHwmBytes / MB) : null,
      samples: mem.samples,
      sampledEveryMs: 100,
    },
  };
}

/** Extra: GET /health — the app's hooks and plugins without a database query. */
export async function runHealth(ctx: Context, api: RunningApi) {
  const r = await loadTest(ctx, 'X-health', { url: `${api.base}/health`, connections: ctx.profile.connections });
  return { what: 'GET /health on the API: every hook and plugin, no database', ...r };
}

/** P2: POST /api/budgets/:address/check on one agent with a budget. */
export async function runP2(ctx: Context, api: RunningApi, label: string) {
  const path = `/api/budgets/${ctx.roles.check}/check`;
  const body = { amount: '1' };
  const probe = await call<{ data: { allowed: boolean } }>(api.base, 'POST', path, body);
  if (!probe.body.data.allowed) throw new Error(`P2: the check answered ${JSON.stringify(probe.body)}`);
  const r = await loadTest(ctx, label, {
    url: `${api.base}${path}`,
    method: 'POST',
    body: JSON.stringify(body),
    connections: ctx.profile.connections,
  });
  return {
    what: `POST /api/budgets/:address/check {"amount":"1"}, API with RATE_LIMIT=${api.env.RATE_LIMIT}, COALESCE_WRITES=${api.env.COALESCE_WRITES ?? 'on'}`,
    path,
    rateLimiter: limiterSeen(probe.headers),
    rateLimitSettings:
      api.env.RATE_LIMIT === 'on' ? { RATE_LIMIT_DEFAULT: api.env.RATE_LIMIT_DEFAULT, store: 'redis' } : null,
    ...r,
  };
}

/**
 * P8: POST /api/decisions for an agent with a budget and a three-rule policy, on the API (rate
 * limiter off) that just served X-P2-ratelimit-off: every decision reads the agent, the budget, the
 * policy and the sanctions of agent, owner and counterparty, evaluates, and stores itself.
 */
export async function runP8(ctx: Context, api: RunningApi) {
  const body = p8Decision(ctx.roles.decide);
  const probe = await call<{ data: { decision: string; policy: { matchedRule: string } } }>(
    api.base,
    'POST',
    '/api/decisions',
    body,
  );
  if (probe.body.data?.decision !== 'allow' || probe.body.data.policy.matchedRule !== 'rest') {
    throw new Error(`P8: the decision answered ${JSON.stringify(probe.body)}`);
  }
  const r = await loadTest(ctx, 'P8', {
    url: `${api.base}/api/decisions`,
    method: 'POST',
    body: JSON.stringify(body),
    connections: ctx.profile.connections,
  });
  const stored = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM decisions WHERE agent = ${ctx.roles.decide}`.execute(ctx.database.db);
  return {
    what: 'POST /api/decisions (budget, three-rule policy, sanctions of agent and counterparty; stored), RATE_LIMIT=off',
    sampleAnswer: probe.body,
    decisionsStored: stored.rows[0]?.n ?? 0,
    ...r,
  };
}

interface BudgetAudit {
  daily_limit: string;
  monthly_limit: string;
  daily_spent: string;
  monthly_spent: string;
  accepted_day: string;
  accepted_month: string;
  accepted_count: number;
  refused_count: number;
}

/** What the database says about a budget after a run: spent vs the accepted ledger vs the limits. */
async function audit(ctx: Context, agent: string) {
  const { rows } = await sql<BudgetAudit>`
    SELECT b.daily_limit::text, b.monthly_limit::text, b.daily_spent::text, b.monthly_spent::text,
      (SELECT coalesce(sum(amount), 0)::text FROM spends s WHERE s.agent = b.agent AND s.accepted AND s.created_at >= b.day_start) AS accepted_day,
      (SELECT coalesce(sum(amount), 0)::text FROM spends s WHERE s.agent = b.agent AND s.accepted AND s.created_at >= b.month_start) AS accepted_month,
      (SELECT count(*)::int FROM spends s WHERE s.agent = b.agent AND s.accepted) AS accepted_count,
      (SELECT count(*)::int FROM spends s WHERE s.agent = b.agent AND NOT s.accepted) AS refused_count
    FROM budgets b WHERE b.agent = ${agent}`.execute(ctx.database.db);
  const row = rows[0];
  if (!row) throw new Error(`no budget for ${agent}`);
  const big = (v: string) => BigInt(v);
  const overspend =
    (big(row.daily_spent) > big(row.daily_limit) ? big(row.daily_spent) - big(row.daily_limit) : 0n) +
    (big(row.monthly_spent) > big(row.monthly_limit) ? big(row.monthly_spent) - big(row.monthly_limit) : 0n);
  const consistent = row.daily_spent === row.accepted_day && row.monthly_spent === row.accepted_month;
  return {
    dailyLimit: row.daily_limit,
    dailySpent: row.daily_spent,
    acceptedLedgerSumToday: row.accepted_day,
    monthlySpent: row.monthly_spent,
    acceptedLedgerSumThisMonth: row.accepted_month,
    acceptedSpends: row.accepted_count,
    refusedSpends: row.refused_count,
    overspend: overspend.toString(),
    spentEqualsLedger: consistent,
  };
}

/**
 * P3: POST /api/budgets/:address/spend {"amount":"1"} (no Idempotency-Key) on one hot budget whose
 * limits admit 10^30 wei, then an audit (spent = Σ accepted ledger ≤ limit). Then the overspend
 * probe: a budget admitting exactly `exhaustLimit` unit spends hit by `exhaustRequests` requests.
 */
export async function runP3(ctx: Context, api: RunningApi) {
  const path = `/api/budgets/${ctx.roles.spendHttp}/spend`;
  const body = JSON.stringify({ amount: '1' });
  await call(api.base, 'POST', path, { amount: '1' });
  const warm = ctx.profile.warmupSec
    ? await httpLoad(
        {
          url: `${api.base}${path}`,
          method: 'POST',
          body,
          connections: ctx.profile.connections,
          durationSec: ctx.profile.warmupSec,
        },
        false,
      )
    : null;
  const { result: r, cpu } = await withCpu(ctx, () =>
    httpLoad({
      url: `${api.base}${path}`,
      method: 'POST',
      body,
      connections: ctx.profile.connections,
      durationSec: ctx.profile.durationSec,
    }),
  );
  if (r.errors || r.non2xx) throw new Error(`P3: ${r.errors} errors, statuses ${JSON.stringify(r.statusCodes)}`);
  const hot = await audit(ctx, ctx.roles.spendHttp);
  const http200s = 1 + (warm?.ok ?? 0) + r.ok;

  // The overspend probe.
  const probePath = `/api/budgets/${ctx.roles.exhaust}/spend`;
  const probe = await httpLoad({
    url: `${api.base}${probePath}`,
    method: 'POST',
    body,
    connections: ctx.profile.connections,
    amount: ctx.profile.exhaustRequests,
  });
  const exhausted = await audit(ctx, ctx.roles.exhaust);
  const limit = ctx.profile.exhaustLimit;
  const probeOk =
    probe.ok === limit &&
    exhausted.acceptedSpends === limit &&
    exhausted.dailySpent === String(limit) &&
    exhausted.overspend === '0' &&
    exhausted.spentEqualsLedger &&
    probe.errors === 0;
  const overspendFree =
    hot.overspend === '0' &&
    hot.spentEqualsLedger &&
    hot.acceptedSpends >= http200s &&
    hot.acceptedSpends - http200s <= 2 * ctx.profile.connections &&
    probeOk;
  return {
    what: 'POST /api/budgets/:address/spend {"amount":"1"} on one hot budget, no Idempotency-Key, RATE_LIMIT=off',
    path,
    ...r,
    acceptedPerSec: r.rps,
    cpu,
    serverCpuMicrosPerRequest: cpu.api && r.rps ? Math.round((cpu.api / r.rps) * 1e6) : null,
    warmupSec: ctx.profile.warmupSec,
    durationSec: ctx.profile.durationSec,
    audit: {
      ...hot,
      http200s,
      // autocannon drops the requests in flight when a run stops (warm-up and measured run): the
      // server still performs them, so the ledger may hold up to 2 × connections more than the 200s.
      acceptedWithoutAnswer: hot.acceptedSpends - http200s,
      ledgerCoversHttp: hot.acceptedSpends >= http200s && hot.acceptedSpends - http200s <= 2 * ctx.profile.connections,
    },
    overspendProbe: {
      what: `a budget of ${limit} wei hit by ${ctx.profile.exhaustRequests} one-wei spends on ${ctx.profile.connections} connections`,
      statusCodes: probe.statusCodes,
      errors: probe.errors,
      ...exhausted,
      exact: probeOk,
    },
    overspendFree,
  };
}

/**
 * P9: POST /api/budgets/:address/spend {"amount":"1"} on a hot budget, measured like P3 (50
 * connections), on two APIs alike but for EVENTS, each on a hot budget of its own. Both are warmed
 * up alike, then loaded in turn in segments of half P3's duration, on, off, off, on (each side gets
 * P3's duration): on a machine shared with other work, what drifts weighs on both sides alike.
 */
export async function runEventsOnOff(ctx: Context, apis: { on: RunningApi; off: RunningApi }) {
  const body = JSON.stringify({ amount: '1' });
  const agents = { on: ctx.roles.spendEventsOn, off: ctx.roles.spendEventsOff };
  const load = (side: 'on' | 'off') => ({
    url: `${apis[side].base}/api/budgets/${agents[side]}/spend`,
    method: 'POST' as const,
    body,
    connections: ctx.profile.connections,
  });
  for (const side of ['on', 'off'] as const) {
    await call(apis[side].base, 'POST', `/api/budgets/${agents[side]}/spend`, { amount: '1' });
    if (ctx.profile.warmupSec) await httpLoad({ ...load(side), durationSec: ctx.profile.warmupSec }, false);
  }
  const order = ['on', 'off', 'off', 'on'] as const;
  const segmentSec = ctx.profile.durationSec / 2;
  const totals = { on: { ok: 0, sec: 0, api: 0, postgres: 0 }, off: { ok: 0, sec: 0, api: 0, postgres: 0 } };
  const segments: Array<{ events: 'on' | 'off'; rps: number; cpu: Record<string, number> }> = [];
  // This run's other API processes stay up meanwhile and still work (each spend's commit notifies
  // every API's read cache): metered as `api-idle`, not as another program's interference.
  const idleBefore = ctx.pids['api-idle'] ?? [];
  const { result: runs, cpu } = await withCpu(ctx, async () => {
    const out = [];
    for (const side of order) {
      // The API under load is the one metered as `api` in this segment.
      ctx.pids.api = [apis[side].proc.pid];
      ctx.pids['api-idle'] = [apis[side === 'on' ? 'off' : 'on'].proc.pid, ...idleBefore];
      const { result: r, cpu: used } = await withCpu(ctx, () => httpLoad({ ...load(side), durationSec: segmentSec }));
      if (r.errors || r.non2xx)
        throw new Error(`P9 (${side}): ${r.errors} errors, statuses ${JSON.stringify(r.statusCodes)}`);
      totals[side].ok += r.ok;
      totals[side].sec += r.elapsedSec;
      // Core-seconds of the API and of this run's PostgreSQL processes.
      totals[side].api += (used.api ?? 0) * r.elapsedSec;
      totals[side].postgres += (used.postgres ?? 0) * r.elapsedSec;
      segments.push({ events: side, rps: r.rps, cpu: used });
      out.push(r);
    }
    // Over the whole run both APIs were under load in turn (the meter reads the groups as it stops).
    ctx.pids.api = [apis.on.proc.pid, apis.off.proc.pid];
    ctx.pids['api-idle'] = idleBefore;
    return out;
  });
  const figures = async (side: 'on' | 'off') => {
    const hot = await audit(ctx, agents[side]);
    // The spends' own events (the recomputations before wrote score events of these agents too).
    const events = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM events WHERE agent = ${agents[side]} AND type IN ('spend.accepted', 'spend.refused')`.execute(
      ctx.database.db,
    );
    const perSpend = (coreSeconds: number) => Math.round((coreSeconds / totals[side].ok) * 1e6);
    return {
      rps: Math.round((totals[side].ok / totals[side].sec) * 10) / 10,
      ok: totals[side].ok,
      /** CPU time per accepted spend, µs: less moved by what else runs than the throughput is. */
      apiCpuMicrosPerSpend: perSpend(totals[side].api),
      postgresCpuMicrosPerSpend: perSpend(totals[side].postgres),
      seconds: Math.round(totals[side].sec * 100) / 100,
      events: events.rows[0]?.n ?? 0,
      overspend: hot.overspend,
      spentEqualsLedger: hot.spentEqualsLedger,
    };
  };
  const on = await figures('on');
  const off = await figures('off');
  return {
    what: 'POST /api/budgets/:address/spend {"amount":"1"} on a hot budget each, two APIs alike but for EVENTS (RATE_LIMIT=off), loaded in turn: on, off, off, on',
    rps: on.rps,
    acceptedPerSec: on.rps,
    on,
    off,
    segmentSec,
    segments,
    cpu,
    latencyOfLastSegment: runs[runs.length - 1]?.latency,
    warmupSec: ctx.profile.warmupSec,
  };
}

/** P4: POST /api/verify, one at a time, evenly paced (same driver as B5), on one keep-alive connection. */
export async function runP4(ctx: Context, api: RunningApi) {
  const client = pacedClient(api.base);
  const body = { address: ctx.roles.verify };
  try {
    const first = await client.post('/api/verify', body);
    if (first.status !== 200) throw new Error(`P4: POST /api/verify answered ${first.status}: ${first.body}`);
    const roundTrips = await pacedJobRoundTrips(ctx, 'P4', jobs.verify.queue, async () => {
      const res = await client.post('/api/verify', body);
      if (res.status !== 200) throw new Error(`POST /api/verify answered ${res.status}: ${res.body.slice(0, 200)}`);
    });
    return {
      what: 'POST /api/verify {address} (queued to the checks queue, one worker process), one at a time, evenly paced',
      sampleAnswer: JSON.parse(first.body) as unknown,
      connections: 1,
      ...roundTrips,
    };
  } finally {
    client.close();
  }
}
