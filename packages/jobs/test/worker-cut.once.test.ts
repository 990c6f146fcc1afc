import { fileURLToPath } from 'node:url';
import { kill, spawnCommand, startRedisServer } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/cut-worker.ts', import.meta.url));

// A worker told to stop while Redis stalls, with a job whose end is being recorded when the
// stop's deadline cuts the connections (fixtures/cut-worker.ts). BullMQ 5 retried that record on
// the cut connection without pause, starving every timer: the process spun and never exited.
describe('a worker whose connections are cut while a job’s end is being recorded', () => {
  it('stops within its deadline, keeps its timers running, exits, and leaves the job active', async () => {
    const redis = await startRedisServer();
    const run = spawnCommand(process.execPath, ['--import', 'tsx', fixture], { ...process.env, REDIS_URL: redis.url });
    try {
      const timer = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
      const code = await Promise.race([run.exited, timer]);
      expect(code, `the worker's process did not exit in 20 s; its output:\n${run.output()}`).toBe(0);
      const seen = JSON.parse(run.output().trim().split('\n').at(-1) as string);
      expect(seen.stopMs).toBeLessThan(300 + 1000);
      expect(seen.timerMs).toBeLessThan(1000);
      // Never recorded as completed: another worker takes it again once its lock lapses.
      expect(seen.state).toBe('active');
    } finally {
      await kill(run);
      await redis.kill();
    }
  }, 40_000);
});
