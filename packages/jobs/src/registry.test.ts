import { describe, expect, it } from 'vitest';
import { assertAwaited, awaitedQueues, jobs, jobsOfQueue } from './registry.ts';

describe('queues', () => {
  it('put recomputation chunks on a queue of their own, apart from batch scores and refreshes', () => {
    expect(jobs.recomputeChunk.queue).toBe('recompute');
    expect([jobs.batchScores.queue, jobs.recompute.queue]).toEqual(['scores', 'scores']);
  });

  it('keep refreshes apart from every job whose result someone reads', () => {
    // BullMQ trims completed jobs per queue by count: a burst of refreshes must not trim them.
    expect(jobs.refreshAgent.queue).toBe('refresh');
    expect(jobsOfQueue('refresh').every((j) => !j.awaited)).toBe(true);
  });

  it('let a job nobody waits for share a queue with awaited ones only if it keeps no result', () => {
    // A finished job trims its queue's finished jobs to its own age and count; count 0 trims nothing.
    for (const queue of awaitedQueues) {
      const unawaited = jobsOfQueue(queue).filter((j) => !j.awaited);
      for (const job of unawaited) expect(job.options.keepCount, job.name).toBe(0);
    }
    expect(jobs.chainCheck.queue).toBe('checks');
  });
});

describe('awaited jobs', () => {
  it('follows the events of the queues producers wait on, not those of recomputation chunks', () => {
    expect(awaitedQueues).toEqual(['scores', 'checks']);
    expect(jobs.recomputeChunk.awaited).toBe(false);
    expect(jobs.recompute.awaited).toBe(true);
  });

  it('refuses to wait for a job that is only ever enqueued', () => {
    expect(() => assertAwaited(jobs.refreshAgent)).toThrow('scores.refresh-agent is not an awaited job');
    expect(() => assertAwaited(jobs.verify)).not.toThrow();
  });
});
