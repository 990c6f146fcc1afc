import { alive, type Spawned, sleep } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionsByJob, type RecomputeRig, recomputeRig } from './support/recompute.ts';
import { ms, report } from './support/report.ts';

// R4: SIGTERM one of two worker processes in the middle of a 10,000-agent recomputation.
// It stops taking jobs, finishes the ones it holds and exits 0 within SHUTDOWN_TIMEOUT_MS;
// no job stalls or runs twice (BullMQ's own counters and the workers' logs agree), and the
// run completes with every agent scored exactly once.
const AGENTS = 10_000;
const TRIALS = 3;
const SHUTDOWN_TIMEOUT_MS = 10_000;

function chunkCompletions(output: string): number {
  return output.split('\n').filter((l) => l.includes('"msg":"job completed"') && l.includes('scores.recompute-chunk'))
    .length;
}

describe('R4 — a worker SIGTERMed mid-recomputation drains and exits', () => {
  let rig: RecomputeRig;

  beforeAll(async () => {
    rig = await recomputeRig({ agents: AGENTS, workers: 2, env: { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) } });
  });
  afterAll(() => rig?.close());

  for (let trial = 1; trial <= TRIALS; trial++) {
    it(`trial ${trial}/${TRIALS}: active jobs finish before the deadline; nothing stalls or repeats`, async () => {
      await rig.reset();
      const since = Date.now();
      const victim = rig.workers.filter(alive)[trial % 2] as Spawned;
      const survivor = rig.workers.filter(alive).find((w) => w !== victim) as Spawned;
      const offsets = new Map(rig.workers.map((w) => [w, w.output().length]));
      const after = 1 + Math.floor(Math.random() * 6);
      let finished = false;
      const run = rig.run().finally(() => {
        finished = true;
      });
      while (chunkCompletions(victim.output().slice(offsets.get(victim))) < after && !finished) await sleep(2);
      const runningAtSignal = !finished;
      const signalledAt = performance.now();
      victim.child.kill('SIGTERM');
      const code = await victim.exited;
      const exitMs = performance.now() - signalledAt;
      const { ms: took, outcome } = await run;

      // The victim said it was draining, then stopped, in time and without giving up on a job.
      const log = victim.output().slice(offsets.get(victim));
      expect(code).toBe(0);
      expect(exitMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      expect(log).toContain('shutting down: finishing active jobs');
      expect(log).toContain('"msg":"stopped"');
      expect(log).not.toContain('did not finish before the deadline');
      const drained = chunkCompletions(log.slice(log.indexOf('shutting down')));

      expect(outcome.state).toBe('completed');
      if (outcome.state !== 'completed') return;
      expect(outcome.result).toMatchObject({ agents: AGENTS, chunks: 40, updated: AGENTS, unchanged: 0 });
      await rig.expectExactlyOnce();
      expect(alive(survivor)).toBe(true);

      // Nothing stalled, nothing was started twice, and each chunk's completion was logged once.
      const chunks = await rig.chunkJobs(since);
      expect(chunks).toHaveLength(40);
      expect(chunks.filter((c) => c.stalledCounter > 0 || c.attemptsStarted !== 1)).toEqual([]);
      const logged = completionsByJob(
        [victim, survivor].map((w) => ({ ...w, output: () => w.output().slice(offsets.get(w)) })),
      );
      expect(logged.size).toBe(40);
      expect([...logged.values()].every((n) => n === 1)).toBe(true);

      report('R4', {
        trial,
        signalledAfterChunks: after,
        runningAtSignal,
        jobsFinishedWhileDraining: drained,
        exitMs: ms(exitMs),
        runMs: ms(took),
      });
      expect(runningAtSignal).toBe(true);
      rig.workers.splice(rig.workers.indexOf(victim), 1);
      await rig.startWorker();
    });
  }
});
