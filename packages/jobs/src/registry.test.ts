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
