import type { JobRunner } from '@vouch/jobs';
import { describe, expect, it, vi } from 'vitest';
import { createScoringJobs } from './scoring-jobs.service.ts';

/** A runner whose enqueue fails while `down` is true, and records what it took. */
function flakyRunner() {
  const state = { down: true, taken: [] as string[] };
  const runner = {
    enqueue: vi.fn(async (_job: unknown, payload: { agent: string }) => {
      if (state.down) throw new Error('the job queue is unavailable');
      state.taken.push(payload.agent);
      return { jobId: `scores-${payload.agent}` };
    }),
  } as unknown as JobRunner;
  return { runner, state };
}

describe('score refreshes while the queue is unreachable', () => {
  it('reports the failure, keeps the refresh and queues it once the queue is back', async () => {
    vi.useFakeTimers();
    try {
      const { runner, state } = flakyRunner();
      const errors: string[] = [];
      const scoring = createScoringJobs({
        runner,
        scores: {} as never,
        audit: {} as never,
        chunkSize: 250,
        refreshRetryMs: 1000,
        onRefreshError: (_error, agent) => errors.push(agent),
      });
      scoring.refresh('0xa');
      scoring.refresh('0xb');
      await vi.advanceTimersByTimeAsync(3000);
      expect(errors).toEqual(['0xa', '0xb']);
      expect(state.taken).toEqual([]);
      state.down = false;
      await vi.advanceTimersByTimeAsync(1000);
      expect(state.taken).toEqual(['0xa', '0xb']);
      // Nothing is left to retry.
      await vi.advanceTimersByTimeAsync(5000);
      expect(state.taken).toEqual(['0xa', '0xb']);
    } finally {
      vi.useRealTimers();
    }
  });
});
