import { describe, expect, it } from 'vitest';
import { assertAwaited, awaitedQueues, concurrencyFrom, jobs, queueNames } from './registry.ts';

describe('concurrencyFrom', () => {
  it('gives recomputation chunks one at a time per process and the other queues WORKER_CONCURRENCY', () => {
    const concurrency = concurrencyFrom({}, 6);
    expect(Object.fromEntries(queueNames.map((q) => [q, concurrency(q)]))).toEqual({
      scores: 6,
      checks: 6,
      recompute: 1,
    });
  });

  it('lets WORKER_CONCURRENCY_<QUEUE> override any queue, its own default included', () => {
    const concurrency = concurrencyFrom({ WORKER_CONCURRENCY_RECOMPUTE: '3', WORKER_CONCURRENCY_CHECKS: '8' }, 4);
    expect([concurrency('recompute'), concurrency('checks'), concurrency('scores')]).toEqual([3, 8, 4]);
  });

  it('refuses a value that is not a positive integer, naming the variable', () => {
    for (const raw of ['0', '-1', '1.5', 'many']) {
      expect(() => concurrencyFrom({ WORKER_CONCURRENCY_RECOMPUTE: raw }, 4)('recompute')).toThrow(
        'WORKER_CONCURRENCY_RECOMPUTE must be a positive integer',
      );
    }
  });
});

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
