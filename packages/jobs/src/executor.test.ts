import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DomainJobError, RunAgainLater } from './errors.ts';
import { backoffMs, createExecutor, UNAVAILABLE_RETRY_MS, verifyProcessors } from './executor.ts';
import { createInProcessRunner } from './in-process.ts';
import type { Processors } from './processor.ts';
import { jobs, jobsByName } from './registry.ts';

const ADDRESS = `0x${'a'.repeat(40)}`;
const screening = {
  address: ADDRESS,
  state: 'clear' as const,
  sanctioned: false,
  matchedLists: [],
  source: { name: 'test', snapshotDate: '2026-01-01', entries: 1, contentHash: null },
  checkedAt: 1,
};

/** A full processor set whose processors fail until told otherwise. */
function processorsWith(screen: Processors['checks.sanctions']): Processors {
  const never = async () => {
    throw new Error('not used in this test');
  };
  const all = Object.fromEntries([...jobsByName.keys()].map((name) => [name, never])) as unknown as Processors;
  return { ...all, 'checks.sanctions': screen };
}

const context = { jobId: 'checks-1', updateProgress: async () => {}, childrenValues: async () => [] };
const request = (attempt: number, data: unknown = { address: ADDRESS }) => ({
  job: jobs.sanctions,
  data,
  attempt,
  queuedAt: Date.now(),
  context,
});

describe('the executor', () => {
  it('refuses a processor set that misses a job or has one the registry does not know', () => {
    const only = { 'scores.batch': async () => ({ updated: 0, agents: [] }) } as unknown as Processors;
    expect(() => verifyProcessors(only)).toThrow(/missing \[.*scores\.recompute/);
    const extra = {
      ...processorsWith(async () => screening),
      'no.such.job': async () => ({}),
    } as unknown as Processors;
    expect(() => verifyProcessors(extra)).toThrow(/unknown \[no\.such\.job\]/);
  });

  it('completes with the result checked against the registry', async () => {
    const execute = createExecutor({ processors: processorsWith(async () => screening) });
    expect(await execute(request(1))).toEqual({ kind: 'completed', result: screening });
  });

  it('refuses a payload the registry refuses, without running the processor', async () => {
    const screen = vi.fn(async () => screening);
    const execute = createExecutor({ processors: processorsWith(screen) });
    const outcome = await execute(request(1, { address: 'nope' }));
    expect(outcome.kind).toBe('refused');
    expect(screen).not.toHaveBeenCalled();
  });

  it('never retries a domain refusal', async () => {
    const refusal = { code: 'AGENT_NOT_REGISTERED', message: 'no' };
    const execute = createExecutor({
      processors: processorsWith(async () => {
        throw new DomainJobError(refusal);
      }),
    });
    expect(await execute(request(1))).toEqual({ kind: 'refused', error: refusal });
  });

  it('runs a job again when its processor asks to, after the delay it names, on any attempt', async () => {
    const execute = createExecutor({
      processors: processorsWith(async () => {
        throw new RunAgainLater(300_000, 'attempt 2 failed');
      }),
    });
    const { attempts } = jobs.sanctions.options;
    // Not an error: the last attempt is no different, nothing is spent.
    expect(await execute(request(attempts))).toEqual({ kind: 'later', delayMs: 300_000, reason: 'attempt 2 failed' });
  });

  it('retries other errors with exponential backoff until the last attempt', async () => {
    const boom = new Error('boom');
    const execute = createExecutor({
      processors: processorsWith(async () => {
        throw boom;
      }),
    });
    const { attempts, backoffMs: base } = jobs.sanctions.options;
    expect(await execute(request(1))).toEqual({ kind: 'retry', delayMs: base, cause: boom });
    expect(await execute(request(2))).toEqual({ kind: 'retry', delayMs: 2 * base, cause: boom });
    expect(await execute(request(attempts))).toEqual({ kind: 'failed', cause: boom });
    expect(backoffMs(jobs.sanctions, 3)).toBe(4 * base);
  });

  it('retries an unavailable dependency without spending an attempt, for a bounded time', async () => {
    const down = new Error('connection refused');
    const execute = createExecutor({
      processors: processorsWith(async () => {
        throw down;
      }),
      isUnavailable: (error) => error === down,
    });
    const last = jobs.sanctions.options.attempts;
    expect(await execute(request(last))).toEqual({ kind: 'unavailable', delayMs: UNAVAILABLE_RETRY_MS, cause: down });
    const old = { ...request(last), queuedAt: Date.now() - 11 * 60_000 };
    expect(await execute(old)).toEqual({ kind: 'failed', cause: down, dependency: true });
  });
});

describe('the in-process runner', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** An in-process runner, one job at a time per queue, whose screenings `screen` does. */
  const runnerWith = (screen: Processors['checks.sanctions'], waitMs = 60_000) =>
    createInProcessRunner({
      execute: createExecutor({ processors: processorsWith(screen) }),
      concurrency: { scores: 1, checks: 1, recompute: 1, refresh: 1, maintenance: 1, webhooks: 1 },
      waitMs,
    });

  /** A promise that ends when `release` is called. */
  function gate() {
    let release!: () => void;
    const passed = new Promise<void>((resolve) => {
      release = resolve;
    });
    return { passed, release };
  }

  /** A runner whose screening fails on the calls `fails` says, counting the calls. */
  function runnerFailing(fails: (call: number) => boolean) {
    const calls = { count: 0 };
    const runner = runnerWith(async () => {
      calls.count++;
      if (fails(calls.count)) throw new Error(`failed call ${calls.count}`);
      return screening;
    });
    return { runner, calls };
  }

  it('runs a failing job again after the backoff, as BullMQ would, and answers once it succeeds', async () => {
    const { runner, calls } = runnerFailing((call) => call < 3);
    const outcome = runner.run(jobs.sanctions, { address: ADDRESS });
    await vi.advanceTimersByTimeAsync(jobs.sanctions.options.backoffMs - 1);
    expect(calls.count).toBe(1);
    await vi.advanceTimersByTimeAsync(1 + 2 * jobs.sanctions.options.backoffMs);
    expect(await outcome).toMatchObject({ state: 'completed', result: screening });
    expect(calls.count).toBe(3);
  });

  it('runs a job that asks to run again after its delay, as often as it asks, without spending attempts', async () => {
    const calls = { count: 0 };
    const runner = runnerWith(async () => {
      calls.count++;
      if (calls.count <= 5) throw new RunAgainLater(60_000);
      return screening;
    }, 3_600_000);
    const outcome = runner.run(jobs.sanctions, { address: ADDRESS });
    await vi.advanceTimersByTimeAsync(59_999);
    expect(calls.count).toBe(1);
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    // Six runs, twice the job's attempts: none was spent.
    expect(await outcome).toMatchObject({ state: 'completed', result: screening });
    expect(calls.count).toBe(6);
  });

  it('adds nothing when a job with the same key has not finished, and adds it again once it has', async () => {
    const { runner, calls } = runnerFailing(() => false);
    const first = await runner.enqueue(jobs.sanctions, { address: ADDRESS }, { jobKey: 'k1', delayMs: 1000 });
    const again = await runner.enqueue(jobs.sanctions, { address: ADDRESS }, { jobKey: 'k1' });
    expect(first.jobId).toBe('checks-k1');
    expect(again.jobId).toBe('checks-k1');
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls.count).toBe(1);
    expect((await runner.get('checks-k1'))?.status).toBe('completed');
    await runner.enqueue(jobs.sanctions, { address: ADDRESS }, { jobKey: 'k1' });
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.count).toBe(2);
  });

  it('closes once a running job ends, even one that ends asking to run again, and runs nothing after', async () => {
    const running = gate();
    const ran = { count: 0 };
    const runner = runnerWith(async () => {
      ran.count++;
      await running.passed;
      throw new RunAgainLater(1000);
    });
    await runner.enqueue(jobs.sanctions, { address: ADDRESS });
    // A second job waits for the queue's one lane.
    await runner.enqueue(jobs.sanctions, { address: `0x${'b'.repeat(40)}` });
    await vi.advanceTimersByTimeAsync(0);
    expect(ran.count).toBe(1);
    let closed = false;
    const closing = runner.close().then(() => {
      closed = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(false);
    running.release();
    await vi.advanceTimersByTimeAsync(0);
    await closing;
    expect(closed).toBe(true);
    // Neither the job that asked to run again nor the one that waited for its lane ran.
    await vi.advanceTimersByTimeAsync(5000);
    expect(ran.count).toBe(1);
  });

  it('keeps the dedupe id of a job queued while an earlier one with that id ran', async () => {
    const first = gate();
    const ran = { count: 0 };
    const runner = runnerWith(async () => {
      ran.count++;
      if (ran.count === 1) await first.passed;
      return screening;
    });
    const dedupe = { dedupeId: 'screen-a' };
    await runner.enqueue(jobs.sanctions, { address: ADDRESS }, dedupe);
    await vi.advanceTimersByTimeAsync(0);
    // The first runs; a second with its id is queued for later (the first no longer stands for it).
    const second = await runner.enqueue(jobs.sanctions, { address: ADDRESS }, { ...dedupe, delayMs: 1000 });
    first.release();
    await vi.advanceTimersByTimeAsync(0);
    // The first's end does not drop the second's id: a third is the second.
    const third = await runner.enqueue(jobs.sanctions, { address: ADDRESS }, dedupe);
    expect(third.jobId).toBe(second.jobId);
    await vi.advanceTimersByTimeAsync(2000);
    expect(ran.count).toBe(2);
  });

  it('keeps finished jobs per queue: a burst in one queue does not forget another queue’s results', async () => {
    const runner = createInProcessRunner({
      execute: createExecutor({
        processors: {
          ...processorsWith(async () => screening),
          'scores.refresh-agent': async () => ({ scored: 1, updated: 0, worker: 'test' }),
        },
      }),
      concurrency: { scores: 1, checks: 1, recompute: 1, refresh: 1, maintenance: 1, webhooks: 1 },
      waitMs: 60_000,
      keepFinished: 3,
    });
    const screened = await runner.run(jobs.sanctions, { address: ADDRESS });
    const refreshes = [];
    for (let i = 0; i < 5; i++) refreshes.push((await runner.enqueue(jobs.refreshAgent, { agent: ADDRESS })).jobId);
    await vi.advanceTimersByTimeAsync(10);
    expect((await runner.get(screened.jobId))?.status).toBe('completed');
    // The refresh queue keeps its own latest three.
    const kept = await Promise.all(refreshes.map(async (id) => (await runner.get(id))?.status ?? null));
    expect(kept).toEqual([null, null, 'completed', 'completed', 'completed']);
  });

  it('keeps no result of a job that keeps none: a burst of them does not forget its queue’s results', async () => {
    const runner = createInProcessRunner({
      execute: createExecutor({
        processors: {
          ...processorsWith(async () => screening),
          'checks.transaction': async () => ({ status: null, changed: false }),
        },
      }),
      concurrency: { scores: 1, checks: 1, recompute: 1, refresh: 1, maintenance: 1, webhooks: 1 },
      waitMs: 60_000,
      keepFinished: 3,
    });
    const screened = await runner.run(jobs.sanctions, { address: ADDRESS });
    const checks = [];
    for (let i = 0; i < 5; i++) {
      const txHash = `0x${String(i).repeat(64)}`;
      checks.push((await runner.enqueue(jobs.chainCheck, { agent: ADDRESS, txHash })).jobId);
    }
    await vi.advanceTimersByTimeAsync(10);
    // As BullMQ (keepCount 0): each check is gone once it finishes, and trims nothing of its queue.
    expect((await runner.get(screened.jobId))?.status).toBe('completed');
    expect(await Promise.all(checks.map((id) => runner.get(id)))).toEqual([null, null, null, null, null]);
  });

  it('forgets a result past its age once another job of its queue finishes, as BullMQ does', async () => {
    const { runner } = runnerFailing(() => false);
    const first = await runner.run(jobs.sanctions, { address: ADDRESS });
    await vi.advanceTimersByTimeAsync(jobs.sanctions.options.keepCompletedSeconds * 1000 - 1000);
    const second = await runner.run(jobs.sanctions, { address: ADDRESS });
    // Within its hour: kept.
    expect((await runner.get(first.jobId))?.status).toBe('completed');
    await vi.advanceTimersByTimeAsync(2000);
    const third = await runner.run(jobs.sanctions, { address: ADDRESS });
    // Past it: gone (404), as BullMQ's removeOnComplete age removes it when the next job finishes.
    expect(await runner.get(first.jobId)).toBeNull();
    expect((await runner.get(second.jobId))?.status).toBe('completed');
    expect((await runner.get(third.jobId))?.status).toBe('completed');
  });

  it('runs a scheduled job at once, then every interval, as a BullMQ job scheduler does', async () => {
    const { runner, calls } = runnerFailing(() => false);
    await runner.every(jobs.sanctions, { address: ADDRESS }, 3_600_000);
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.count).toBe(1);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(calls.count).toBe(2);
    await runner.close();
  });

  it('keeps at most one run of a schedule waiting while its queue is busy, as a BullMQ job scheduler', async () => {
    // BullMQ adds a schedule's next run when one starts; a timer that queued one every interval
    // whatever happened piled up a run per interval behind a long one, all run back to back after it.
    const held = gate();
    let calls = 0;
    const runner = runnerWith(async () => {
      calls++;
      if (calls === 1) await held.passed;
      return screening;
    });
    await runner.every(jobs.sanctions, { address: ADDRESS }, 1000);
    await vi.advanceTimersByTimeAsync(10_500);
    expect((await runner.inspect()).checks.waiting).toBe(1);
    held.release();
    await vi.advanceTimersByTimeAsync(10);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(3);
    await runner.close();
  });

  it('fails after the last attempt with what the processor threw', async () => {
    const { runner, calls } = runnerFailing(() => true);
    const outcome = runner.run(jobs.sanctions, { address: ADDRESS });
    const settled = expect(outcome).rejects.toThrow(`failed call ${jobs.sanctions.options.attempts}`);
    await vi.advanceTimersByTimeAsync(10_000);
    await settled;
    expect(calls.count).toBe(jobs.sanctions.options.attempts);
  });
});
