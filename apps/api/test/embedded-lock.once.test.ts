import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirLockedError, lockDataDir } from '@vouch/db';
import { freePort, kill, sleep, spawnBuilt, startEmbeddedApi, waitForHttp } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

const env = { REDIS_URL: '', AUTH: 'off', RATE_LIMIT: 'off' };
const agent = `0x${'ab'.repeat(20)}`;

/** The API bundle on `dataDir`, as a second `npm start` in the same directory would run it. */
async function second(dataDir: string) {
  const port = await freePort();
  const server = await spawnBuilt('api', { ...env, PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: '' });
  return { server, base: `http://127.0.0.1:${port}` };
}

// Two processes on one embedded database would both start, diverge and lose acknowledged writes.
describe('the embedded database directory', () => {
  it('refuses a second process on the same DATA_DIR, naming the holder, and keeps the first one’s data', async () => {
    const first = await startEmbeddedApi(env);
    try {
      const register = await fetch(`${first.base}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address: agent }),
      });
      expect(register.status).toBe(201);
      const { dataDir } = first;

      const refused = await second(dataDir);
      try {
        const exit = await Promise.race([refused.server.exited, sleep(30_000).then(() => 'still running')]);
        expect(exit).toBe(1);
        const pid = first.server.child.pid;
        expect(refused.server.output()).toContain(
          `vouch-api: could not start: DATA_DIR ${dataDir} is in use by process ${pid}`,
        );
        expect(refused.server.output()).not.toMatch(/\n\s+at /);
      } finally {
        await kill(refused.server);
      }

      // The holder stops (even without a chance to clean up): the directory is free again, data intact.
      await kill(first.server);
      const next = await second(dataDir);
      try {
        await waitForHttp(`${next.base}/health`, next.server);
        const read = await fetch(`${next.base}/api/agents/${agent}`);
        expect(read.status).toBe(200);
      } finally {
        await kill(next.server);
      }
    } finally {
      first.remove();
    }
  }, 120_000);

  it('takes over at once a lock its own pid left in a crash (a restarted container), and still refuses a second holder', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vouch-lock-'));
    try {
      // What a process killed moments ago leaves, when its successor has its pid: in a container
      // restarted after a crash, the process numbers come out the same. The lock is fresh (under
      // its 30 s staleness), and the holder it names is this very process.
      mkdirSync(join(dataDir, 'vouch.lock'));
      const since = new Date(Date.now() - 1000).toISOString();
      writeFileSync(
        join(dataDir, 'vouch.lock.holder.json'),
        `${JSON.stringify({ pid: process.pid, host: hostname(), role: 'all', since })}\n`,
      );
      const lock = await lockDataDir(dataDir, 'all');
      try {
        // Held by this process now: a second runtime of the same process is refused as any other.
        await expect(lockDataDir(dataDir, 'all')).rejects.toBeInstanceOf(DataDirLockedError);
      } finally {
        await lock.release();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
