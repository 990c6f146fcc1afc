import { sleep, until } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settleAndCheck, spendLoad } from './support/load.ts';
import { expectJobsCompleted, expectProbes, probeFor, slowest } from './support/probes.ts';
import { ms, report } from './support/report.ts';
import { databaseProbes, deadProcesses, JOB_WAIT_MS, loadTargets, type Stack, startStack } from './support/stack.ts';

// R6: PostgreSQL stopped under load — `fast` (clients told to go), then `immediate` (a crash) —
// kept down for a while, then started again; then restarted outright in both modes. No process
// crashes; while it is down everything that needs it answers 503 within 1 s; within 5 s of its
// return everything works; and the books balance: every spend (each under its own
// Idempotency-Key, retried until it is decided) has exactly one ledger row and the budget's
// counter is the sum of the accepted ones.
const DOWN_MS = 3000;

describe('R6 — PostgreSQL restarted (fast, then immediate)', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  /** Polls every API's essential routes until all of them answer normally. */
  async function recovery(): Promise<number> {
    return until(
      async () => {
        const answers = await Promise.all(
          stack.apis.flatMap((a) => [
            a.client.get(`/api/budgets/${a.agent}`),
            a.client.post(`/api/budgets/${a.agent}/check`, { amount: '1' }),
            a.client.post(`/api/budgets/${a.agent}/spend`, { amount: '1' }),
            a.client.get('/ready'),
          ]),
        );
        return answers.every((r) => r.status === 200);
      },
      5000,
      50,
    );
  }

  for (const mode of ['fast', 'immediate'] as const) {
    it(`stop -m ${mode} for ${DOWN_MS / 1000} s under load: 503 within 1 s, back within 5 s, books balance`, async () => {
      const load = spendLoad(await loadTargets(stack), 4);
      await sleep(500);
      await stack.cluster.stop(mode);
      const stoppedAt = performance.now();
      const probes = stack.apis.flatMap(databaseProbes);
      const down = await probeFor(stack.bullmq.client, probes, DOWN_MS);
      expectProbes(probes, down, 1000);
      expect(deadProcesses(stack)).toBe('');

      await stack.cluster.start();
      const downFor = performance.now() - stoppedAt;
      const recoveredMs = await recovery();
      await sleep(500);
      await load.stop();
      const books = await settleAndCheck(load.records, stack.ledger);

      // Checks accepted while the database was away ran once it was back, on either transport.
      const acceptedBy = (api: { name: string }) =>
        down.filter((l) => l.jobId && l.name.startsWith(api.name)).map((l) => l.jobId as string);
      const accepted = [...acceptedBy(stack.bullmq), ...acceptedBy(stack.inProcess)];
      expect(acceptedBy(stack.bullmq).length).toBeGreaterThan(0);
      expect(acceptedBy(stack.inProcess).length).toBeGreaterThan(0);
      await expectJobsCompleted(stack.bullmq.client, acceptedBy(stack.bullmq), 30_000);
      await expectJobsCompleted(stack.inProcess.client, acceptedBy(stack.inProcess), 30_000);
      expect(deadProcesses(stack)).toBe('');
      report('R6', {
        mode,
        downMs: ms(downFor),
        probesWhileDown: down.length,
        slowestWhileDownMs: slowest(down),
        recoveredAfterMs: ms(recoveredMs),
        queuedChecksAcceptedWhileDown: accepted.length,
        jobWaitMs: JOB_WAIT_MS,
        ...books,
      });
    });
  }

  for (const mode of ['fast', 'immediate'] as const) {
    it(`pg_ctl restart -m ${mode} under load: no crash, only 2xx or 503, back within 5 s, books balance`, async () => {
      const load = spendLoad(await loadTargets(stack), 4);
      await sleep(500);
      const started = performance.now();
      await stack.cluster.restart(mode);
      const restartMs = performance.now() - started;
      const recoveredMs = await recovery();
      await sleep(500);
      await load.stop();
      const books = await settleAndCheck(load.records, stack.ledger);
      expect(deadProcesses(stack)).toBe('');
      report('R6', {
        mode: `restart -m ${mode}`,
        restartMs: ms(restartMs),
        recoveredAfterMs: ms(recoveredMs),
        ...books,
      });
    });
  }
});
