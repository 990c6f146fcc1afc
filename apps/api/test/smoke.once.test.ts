import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  dropPrefix,
  type EmbeddedApi,
  freePort,
  kill,
  logLines,
  redisAvailable,
  type Spawned,
  sleep,
  spawnCommand,
  startEmbeddedApi,
  TEST_REDIS_URL,
  testPrefix,
  waitForHttp,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `npm start` on a bare machine: the embedded server as a real process over real HTTP.
describe('embedded server (PGlite) as a process', () => {
  let api: EmbeddedApi;
  let base: string;
  let server: Spawned;

  beforeAll(async () => {
    api = await startEmbeddedApi({ REDIS_URL: '' }, '/api/agents');
    ({ base, server } = api);
  }, 90_000);

  afterAll(() => api?.remove());

  it('serves the API over HTTP and keeps data on disk', async () => {
    const address = '0x52908400098527886e0f7030069857d2e4169ee7';
    const register = await fetch(`${base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address }),
    });
    expect(register.status).toBe(201);
    const set = await fetch(`${base}/api/budgets/${address}/set`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ dailyLimit: '100', monthlyLimit: '500' }),
    });
    expect(set.status).toBe(200);
    const spend = await fetch(`${base}/api/budgets/${address}/spend`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '40' }),
    });
    expect(await spend.json()).toMatchObject({ success: true, data: { dailySpent: '40' } });
    const agent = await (await fetch(`${base}/api/agents/${address}`)).json();
    expect(agent).toMatchObject({ success: true, data: { address, isRegistered: true } });
    expect(server.output()).toContain('"driver":"pglite"');
  });

  it('shuts down cleanly on SIGTERM', async () => {
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

// `docker stop` sends SIGTERM to the container's first process only: npm, for the image's
// `npm start` and compose's `npm run start:api` and `start:worker`. npm passes it to the shell
// that runs the script, which must hand it to the server, not die and leave it running.
describe('npm start as a container runs it', () => {
  it('drains and stops the server when npm gets SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vouch-npm-start-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = { ...process.env, PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' };
    const npm = spawnCommand('npm', ['start'], { ...env, LOG_LEVEL: 'info' });
    let serverPid: number | undefined;
    try {
      await waitForHttp(`${base}/health`, npm, 90_000);
      serverPid = logLines(npm).find((line) => typeof line.pid === 'number')?.pid as number | undefined;
      expect(serverPid).not.toBe(npm.child.pid);
      // Its output ends when the server's does (the server writes to npm's pipes).
      const closed = new Promise((resolve) => npm.child.once('close', resolve));
      npm.child.kill('SIGTERM');
      await Promise.race([closed, sleep(20_000)]);
      expect(logLines(npm).map((line) => line.msg)).toContain('stopped');
      expect(await npm.exited).toBe(0);
      await expect(fetch(`${base}/health`)).rejects.toThrow();
    } finally {
      // A server left running by npm's end is this test's to end.
      if (serverPid) {
        try {
          process.kill(serverPid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await kill(npm);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

// `npm start` with REDIS_URL: the API and a worker in one process, jobs on BullMQ.
describe.runIf(await redisAvailable())('embedded server with Redis as a process', () => {
  let api: EmbeddedApi;
  let base: string;
  let server: Spawned;
  const prefix = testPrefix();

  beforeAll(async () => {
    api = await startEmbeddedApi({ REDIS_URL: TEST_REDIS_URL, BULLMQ_PREFIX: prefix }, '/api/agents');
    ({ base, server } = api);
  }, 90_000);

  afterAll(async () => {
    api?.remove();
    await dropPrefix(prefix);
  });

  it('runs queued work through BullMQ and serves the queue dashboard', async () => {
    const address = '0x52908400098527886e0f7030069857d2e4169ee7';
    const json = { 'content-type': 'application/json' };
    expect(
      (await fetch(`${base}/api/agents/register`, { method: 'POST', headers: json, body: JSON.stringify({ address }) }))
        .status,
    ).toBe(201);
    const batch = await fetch(`${base}/api/agents/batch-scores`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ agents: [address], scores: [810], reasons: ['0x01'] }),
    });
    expect(await batch.json()).toEqual({
      success: true,
      data: { updated: 1, agents: [{ address, score: 810, grade: 'BBB' }] },
    });
    expect(server.output()).toContain('"jobs":"bullmq"');
    const dashboard = await fetch(`${base}/admin/queues`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain('<html');
  });
});
