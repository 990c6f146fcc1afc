import { describe, expect, it } from 'vitest';
import { assertAwaited, awaitedQueues, jobs } from './registry.ts';

describe('queues', () => {
  it('put recomputation chunks on a queue of their own, apart from batch scores and refreshes', () => {
    expect(jobs.recomputeChunk.queue).toBe('recompute');
    expect([jobs.batchScores.queue, jobs.refreshAgent.queue, jobs.recompute.queue]).toEqual([
      'scores',
      'scores',
      'scores',
    ]);
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
