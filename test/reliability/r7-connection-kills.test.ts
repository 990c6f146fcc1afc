import { randomBytes } from 'node:crypto';
import { randomAddress, sleep, until } from '@vouch/testkit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Answer } from './support/http.ts';
import { settleAndCheck, spendLoad } from './support/load.ts';
import { expectJobsCompleted } from './support/probes.ts';
import { ms, report } from './support/report.ts';
import { deadProcesses, JOB_WAIT_MS, loadTargets, type Stack, startStack } from './support/stack.ts';

// R7: connections killed under load — every client of Redis (`CLIENT KILL TYPE normal`) and
// every Vouch backend of PostgreSQL (`pg_terminate_backend`), one or both at a time, again
// and again. As in R5/R6: no process crashes, an answer that cannot be given is a 503 within
// 1 s (never a 500, never a dropped connection), everything works again within 5 s of each
// kill, the books balance and every accepted job completes.
const ROUNDS = 9;
const GAP_MS = 2500;

type Kill = 'redis' | 'postgres' | 'both';

/** Ends every backend of a Vouch process (API or worker), one row per backend ended. */
const TERMINATE_VOUCH_BACKENDS = `SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
  WHERE application_name LIKE 'vouch%' AND pid <> pg_backend_pid()`;

describe('R7 — connections killed under load', () => {
  let stack: Stack;
  let redis: Redis;

  beforeAll(async () => {
    stack = await startStack();
    redis = new Redis(stack.redis.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await stack?.close();
  });

  async function killConnections(kind: Kill): Promise<{ redis: number; postgres: number }> {
    const killed = { redis: 0, postgres: 0 };
    await Promise.all([
      kind !== 'postgres' &&
        redis.call('CLIENT', 'KILL', 'TYPE', 'normal').then((n) => {
          killed.redis = Number(n);
        }),
      kind !== 'redis' &&
        stack.cluster.query<{ pid: number }>(TERMINATE_VOUCH_BACKENDS).then((rows) => {
          killed.postgres = rows.length;
        }),
    ]);
    return killed;
  }

  /** Every API's main paths answer normally again: a spend, a check, a queued verification, readiness. */
  async function healthy(): Promise<boolean> {
    const answers = await Promise.all(
      stack.apis.flatMap((a) => [
        a.client.post(`/api/budgets/${a.agent}/spend`, { amount: '1' }),
        a.client.get('/ready'),
        a.client.post('/api/verify', { address: randomAddress() }),
      ]),
    );
    return answers.every((r) => r.status === 200);
  }

  it(`${ROUNDS} rounds of killed connections: no crash, only 2xx/422 or a prompt 503, recovery within 5 s`, async () => {
    const load = spendLoad(await loadTargets(stack), 4);
    // Queued work alongside: verifications on both APIs, every answer kept.
    const queued: Array<{ api: string; answer: Answer }> = [];
    let running = true;
    const verifying = stack.apis.map(async (a) => {
      while (running) {
        const answer = await a.client.post(
          '/api/verify',
          { address: `0x${randomBytes(20).toString('hex')}` },
          {},
          10_000,
        );
        queued.push({ api: a.name, answer });
        await sleep(50);
      }
    });

    const rounds: Array<{ kind: Kill; killed: { redis: number; postgres: number }; recoveredMs: number }> = [];
    const kinds: Kill[] = ['redis', 'postgres', 'both'];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(GAP_MS / 2);
      const kind = kinds[round % kinds.length] as Kill;
      const killed = await killConnections(kind);
      const recoveredMs = await until(healthy, 5000, 50);
      rounds.push({ kind, killed, recoveredMs: ms(recoveredMs) });
      expect(deadProcesses(stack)).toBe('');
      await sleep(GAP_MS / 2);
    }
    running = false;
    await Promise.all(verifying);
    await load.stop();

    // Every queued answer was a result, an acceptance or a prompt 503.
    for (const { api, answer } of queued) {
      expect([200, 202, 503], `${api}: ${answer.status} ${answer.error ?? JSON.stringify(answer.body)}`).toContain(
        answer.status,
      );
      if (answer.status === 503) expect(answer.ms, api).toBeLessThanOrEqual(1000);
      expect(answer.ms, api).toBeLessThanOrEqual(JOB_WAIT_MS + 1000);
    }
    // Every spend answer was a decision or a prompt 503, and after settling the books balance.
    for (const record of load.records) {
      for (const a of record.answers) if (a.status === 503) expect(a.ms).toBeLessThanOrEqual(1000);
    }
    const books = await settleAndCheck(load.records, stack.ledger);

    // Accepted jobs complete, on whichever transport took them.
    const acceptedBy = (api: { name: string }) =>
      queued
        .filter((q) => q.api === api.name && q.answer.status === 202)
        .map((q) => q.answer.body.data.jobId as string);
    const accepted = [...acceptedBy(stack.bullmq), ...acceptedBy(stack.inProcess)];
    await expectJobsCompleted(stack.bullmq.client, acceptedBy(stack.bullmq), 30_000);
    await expectJobsCompleted(stack.inProcess.client, acceptedBy(stack.inProcess), 30_000);
    expect(deadProcesses(stack)).toBe('');
    report('R7', {
      case: 'killed connections',
      rounds,
      maxRecoveredMs: Math.max(...rounds.map((r) => r.recoveredMs)),
      queued: queued.length,
      queued503: queued.filter((q) => q.answer.status === 503).length,
      queued202: accepted.length,
      maxQueuedMs: ms(Math.max(...queued.map((q) => q.answer.ms))),
      ...books,
    });
  });

  it('every connection slot taken: new connections are refused (53300) and answer 503 within 1 s; back within 5 s', async () => {
    // The APIs' backends go; then this test takes every slot the server has left, so each
    // API must open a connection and is refused ("sorry, too many clients already").
    await killConnections('postgres');
    const hogs: pg.Client[] = [];
    const takeEverySlot = async () => {
      for (;;) {
        const client = new pg.Client({ connectionString: stack.cluster.url('postgres') });
        client.on('error', () => {});
        try {
          await client.connect();
          hogs.push(client);
        } catch (error) {
          expect((error as { code?: string }).code).toBe('53300');
          return;
        }
      }
    };
    await takeEverySlot();
    // An API may have connected again between the kill and the last slot taken (its sweeps run
    // every few seconds): its backends go again, and their slots are taken, until none is left.
    for (let round = 0; ; round++) {
      const { rows } = await (hogs[0] as pg.Client).query(TERMINATE_VOUCH_BACKENDS);
      if (rows.length === 0) break;
      expect(round, 'the APIs kept connecting again').toBeLessThan(20);
      await takeEverySlot();
    }
    try {
      const answers = await Promise.all(
        stack.apis.flatMap((a) => [
          a.client.get(`/api/budgets/${a.agent}`),
          a.client.post(`/api/budgets/${a.agent}/spend`, { amount: '1' }),
          a.client.get('/ready'),
        ]),
      );
      for (const a of answers) {
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(a.ms).toBeLessThanOrEqual(1000);
      }
    } finally {
      await Promise.all(hogs.map((c) => c.end().catch(() => {})));
    }
    const recoveredMs = await until(healthy, 5000, 50);
    expect(deadProcesses(stack)).toBe('');
    report('R7', { case: 'connection slots exhausted', slotsTaken: hogs.length, recoveredMs: ms(recoveredMs) });
  });
});
