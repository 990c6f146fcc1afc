import { type DisposableCluster, kill, startApi, startPostgresCluster } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report } from './support/report.ts';

// R10: the database's connections freeze (their backends stopped with SIGSTOP: the sockets
// stay open, nothing answers). Every request still answers within the query timeout and a bit —
// a 503 while a frozen connection is tried, never a hang — and the pool replaces the frozen
// connections with fresh ones, so requests succeed again while the old backends stay frozen.
const QUERY_TIMEOUT_MS = 1000;

describe('R10 — frozen database connections', () => {
  let cluster: DisposableCluster;
  let api: Awaited<ReturnType<typeof startApi>>;
  let frozen: number[] = [];

  beforeAll(async () => {
    cluster = await startPostgresCluster();
    api = await startApi({
      DATABASE_URL: cluster.url(),
      REDIS_URL: '',
      AUTH: 'off',
      RATE_LIMIT: 'off',
      CACHE_READS: 'off',
      DB_POOL_MAX: '4',
      DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      // PostgreSQL ends a slow statement before the client gives up on it (packages/config).
      DB_STATEMENT_TIMEOUT_MS: String(QUERY_TIMEOUT_MS / 2),
      MIGRATE_ON_START: 'true',
    });
  });
  afterAll(async () => {
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    await kill(api?.spawned);
    await cluster?.destroy();
  });

  it('answers every request within the timeout and recovers while the old connections stay frozen', async () => {
    const agent = `0x${'cd'.repeat(20)}`;
    const post = await fetch(`${api.base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address: agent }),
    });
    expect(post.status).toBe(201);
    // Open every connection of the pool.
    await Promise.all(Array.from({ length: 8 }, () => fetch(`${api.base}/api/agents/${agent}`)));
    const backends = await cluster.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = 'vouch-all'`,
    );
    expect(backends.length).toBeGreaterThan(0);
    frozen = backends.map((b) => b.pid);
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');

    const answers: Array<{ status: number; ms: number }> = [];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const started = Date.now();
      const res = await fetch(`${api.base}/api/agents/${agent}`, { signal: AbortSignal.timeout(10_000) });
      answers.push({ status: res.status, ms: Date.now() - started });
      if (res.status === 200 && answers.filter((a) => a.status === 200).length >= 5) break;
    }
    report('R10', {
      frozenBackends: frozen.length,
      answers: answers.length,
      statuses: answers.map((a) => a.status).join(','),
      slowestMs: Math.max(...answers.map((a) => a.ms)),
    });
    // Never a hang, never a 500: 503 while a frozen connection is tried, then 200 again.
    for (const a of answers) {
      expect([200, 503]).toContain(a.status);
      expect(a.ms).toBeLessThan(QUERY_TIMEOUT_MS + 1500);
    }
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(5);
    const ready = await fetch(`${api.base}/ready`);
    expect(ready.status).toBe(200);
  }, 120_000);
});
