import { createAgent, createTestApp, randomAddress, sleep, type TestContext } from '@vouch/testkit';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { report } from './support/report.ts';
import {
  allCompleted,
  type BullmqTestApp,
  bullmqTestApp,
  gate,
  hangingVerify,
  type LagProxy,
  startLagProxy,
  waitingRequests,
} from './support/waits.ts';

// R8: a processor that hangs, an events consumer that lags, a Redis that stops answering:
// every waiting request still gets its result or a 202 within JOB_WAIT_TIMEOUT_MS + 1 s.
const WAIT_MS = 1500;
const REQUESTS = 10;
const verify = { url: '/api/verify', body: () => ({ address: randomAddress() }) };

describe('R8 — waiting requests answer within the wait timeout + 1 s', () => {
  let t: TestContext | undefined;
  let stack: BullmqTestApp | undefined;
  let proxy: LagProxy | undefined;
  const release = { open: () => {} };

  afterEach(async () => {
    release.open();
    await t?.close();
    await stack?.close();
    await proxy?.close();
    t = undefined;
    stack = undefined;
    proxy = undefined;
  });

  async function bullmqApp(
    processors: Parameters<typeof bullmqTestApp>[0]['processors'],
    producerUrl?: (url: string) => Promise<string>,
  ) {
    stack = await bullmqTestApp({ waitMs: WAIT_MS, processors, ...(producerUrl && { producerUrl }) });
    return stack.t;
  }

  it('in-process runner, a processor that hangs: 202s in time; other queues unaffected; the jobs finish later', async () => {
    const held = gate();
    release.open = held.open;
    t = await createTestApp({
      jobs: 'in-process',
      waitMs: WAIT_MS,
      processors: (real) => hangingVerify(real, held.opened),
    });
    const figures = await waitingRequests(t.app, { requests: REQUESTS, waitMs: WAIT_MS, ...verify });
    expect(figures.accepted202).toBe(REQUESTS);
    const job = (await t.app.inject({ method: 'GET', url: `/api/jobs/${figures.jobIds[0]}` })).json().data;
    expect(['active', 'waiting']).toContain(job.status);
    // The scores queue has lanes of its own.
    const agent = await createAgent(t.app);
    const batch = await t.app.inject({
      method: 'POST',
      url: '/api/agents/batch-scores',
      payload: { agents: [agent], scores: [5], reasons: ['0x'] },
    });
    expect(batch.statusCode).toBe(200);
    held.open();
    const ms = await allCompleted(t.app, figures.jobIds);
    report('R8', {
      case: 'in-process, hung processor',
      waitMs: WAIT_MS,
      ...figures,
      jobIds: undefined,
      drainMs: Math.round(ms),
    });
  });

  it('BullMQ, a worker whose processor hangs: 202s in time; the jobs finish once it is released', async () => {
    const held = gate();
    release.open = held.open;
    const app = (await bullmqApp((real) => hangingVerify(real, held.opened))).app;
    const figures = await waitingRequests(app, { requests: REQUESTS, waitMs: WAIT_MS, ...verify });
    expect(figures.accepted202).toBe(REQUESTS);
    held.open();
    const ms = await allCompleted(app, figures.jobIds);
    report('R8', {
      case: 'BullMQ, hung processor',
      waitMs: WAIT_MS,
      ...figures,
      jobIds: undefined,
      drainMs: Math.round(ms),
    });
  });

  it('BullMQ, the events consumer lags: finished jobs still answer 200 within the wait + 1 s', async () => {
    const app = (
      await bullmqApp(
        (real) => real,
        async (url) => {
          proxy = await startLagProxy(url);
          return proxy.url;
        },
      )
    ).app;
    // Warm up: the events connection has issued its XREAD and is known to the proxy.
    expect((await waitingRequests(app, { requests: 1, waitMs: WAIT_MS, ...verify })).completed200).toBe(1);
    proxy?.setLagging(true);
    const figures = await waitingRequests(app, { requests: REQUESTS, waitMs: WAIT_MS, ...verify });
    // No completion event arrived, yet every job had finished: each answer is its result.
    expect(proxy?.held()).toBeGreaterThan(0);
    expect(figures.completed200).toBe(REQUESTS);
    proxy?.setLagging(false);
    const after = await waitingRequests(app, { requests: 1, waitMs: WAIT_MS, ...verify });
    expect(after.completed200).toBe(1);
    expect(after.maxMs).toBeLessThan(WAIT_MS);
    report('R8', {
      case: 'BullMQ, events lag',
      waitMs: WAIT_MS,
      ...figures,
      jobIds: undefined,
      heldBytes: proxy?.held(),
    });
  });

  it('BullMQ, Redis stops answering (CLIENT PAUSE) while requests wait: 202s in time; the jobs finish after', async () => {
    const held = gate();
    release.open = held.open;
    const app = (await bullmqApp((real) => hangingVerify(real, held.opened))).app;
    const pending = waitingRequests(app, { requests: REQUESTS, waitMs: WAIT_MS, ...verify });
    await sleep(300); // the jobs are queued and waited on
    // Every client of this Redis stalls (the API's producer and events, the worker) for the whole wait.
    const pauser = new Redis(stack?.redis.url as string);
    await pauser.call('CLIENT', 'PAUSE', String(WAIT_MS + 3000), 'ALL');
    pauser.disconnect();
    held.open();
    const figures = await pending;
    expect(figures.accepted202).toBe(REQUESTS);
    const ms = await allCompleted(app, figures.jobIds);
    report('R8', {
      case: 'BullMQ, Redis paused',
      waitMs: WAIT_MS,
      ...figures,
      jobIds: undefined,
      drainMs: Math.round(ms),
    });
  });
});
