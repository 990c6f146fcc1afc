import { createdWebhook, type Delivery, deliveryList, successEnvelope } from '@vouch/schemas';
import {
  createAgentWithBudget,
  createTestApp,
  kill,
  logLines,
  type PersistentRedis,
  post,
  type Receiver,
  type Spawned,
  spawnBuilt,
  startPersistentRedis,
  startReceiver,
  type TestContext,
  testPrefix,
  until,
  waitForOutput,
} from '@vouch/testkit';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

// Deliveries by real worker processes over BullMQ, on a Redis of this file's own (one test stops
// it) and a PostgreSQL database of its own; the receiver is a real HTTP server on 127.0.0.1.
const runnable = inject('testDbMode') === 'postgres';

describe.runIf(runnable)('webhook deliveries by worker processes', () => {
  let redis: PersistentRedis;
  let receiver: Receiver;
  let t: TestContext;
  const prefix = testPrefix();
  const workers: Spawned[] = [];

  beforeAll(async () => {
    redis = await startPersistentRedis();
    receiver = await startReceiver();
    // This process is the API alone: it writes events and queues, the workers deliver.
    t = await createTestApp({
      role: 'api',
      env: {
        REDIS_URL: redis.url,
        BULLMQ_PREFIX: prefix,
        WEBHOOK_SWEEP_INTERVAL_MS: '1000',
      },
    });
  }, 60_000);

  afterEach(async () => {
    receiver.answer(() => ({ status: 200 }));
    for (const w of workers.splice(0)) await kill(w);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await redis?.destroy();
  });

  async function startWorker(): Promise<Spawned> {
    const worker = await spawnBuilt('worker', {
      DATABASE_URL: (t.database as { url?: string }).url as string,
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: prefix,
      LOG_LEVEL: 'debug',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on',
      // A killed worker's jobs come back after the lock lapses.
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
    });
    workers.push(worker);
    await waitForOutput(worker, 'workers started', 90_000);
    return worker;
  }

  let endpoints = 0;
  async function subscribe(eventTypes: string[]) {
    const path = `/hooks/${++endpoints}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: `http://127.0.0.1:${receiver.port}${path}`, eventTypes },
    });
    expect(res.statusCode, res.body).toBe(201);
    return { ...successEnvelope(createdWebhook).parse(res.json()).data, path };
  }

  async function deliveries(id: string): Promise<Delivery[]> {
    const res = await t.app.inject({ method: 'GET', url: `/api/webhooks/${id}/deliveries` });
    return successEnvelope(deliveryList).parse(res.json()).data.deliveries;
  }

  async function refusedSpend(): Promise<string> {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '11' })).statusCode).toBe(422);
    return agent;
  }

  it('delivers an event whose worker was killed mid-delivery: at least once, with the same webhook-id', async () => {
    const first = await startWorker();
    const hook = await subscribe(['spend.refused']);
    // The first request is held open: its worker is mid-delivery when it dies.
    let held = false;
    receiver.answer(() => {
      if (held) return { status: 200 };
      held = true;
      return { hang: true };
    });
    const agent = await refusedSpend();
    await receiver.waitFor(1, 30_000, (r) => r.path === hook.path);
    expect(held).toBe(true);
    const survivor = await startWorker();
    await kill(first);

    const got = await receiver.waitFor(2, 30_000, (r) => r.path === hook.path);
    const ids = new Set(got.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const r of got) {
      expect(new Webhook(hook.secret).verify(r.body, r.headers)).toMatchObject({ type: 'spend.refused', agent });
    }
    await until(async () => (await deliveries(hook.id))[0]?.status === 'succeeded', 15_000);
    const [done] = await deliveries(hook.id);
    // The killed attempt never finished: the one recorded is the survivor's.
    expect(done).toMatchObject({ status: 'succeeded', attempts: 1, lastStatusCode: 200, eventId: [...ids][0] });
    expect(logLines(survivor).some((l) => l.jobName === 'webhooks.deliver')).toBe(true);
  }, 120_000);

  it('delivers after the backoff once a receiver that was down is back', async () => {
    await startWorker();
    const hook = await subscribe(['spend.refused']);
    await receiver.down();
    try {
      await refusedSpend();
      await until(async () => (await deliveries(hook.id))[0]?.attempts === 1, 30_000);
      const [failed] = await deliveries(hook.id);
      expect(failed).toMatchObject({ status: 'pending', lastStatusCode: null });
    } finally {
      await receiver.up();
    }
    // The next attempt is 5 s after the first: BullMQ holds the job delayed until then.
    await until(async () => (await deliveries(hook.id))[0]?.status === 'succeeded', 30_000);
    const [done] = await deliveries(hook.id);
    expect(done?.attemptLog.map((a) => a.statusCode)).toEqual([null, 200]);
    const [got] = await receiver.waitFor(1, 1000, (r) => r.path === hook.path);
    expect(got?.headers['webhook-id']).toBe(done?.eventId);
  }, 120_000);

  it('delivers events committed while Redis was down, once it is back', async () => {
    await startWorker();
    const hook = await subscribe(['spend.refused']);
    await redis.stop();
    let agent: string;
    try {
      // The spend and its event commit; asking for the fan-out fails, and nothing is lost.
      agent = await refusedSpend();
    } finally {
      await redis.start();
    }
    // The sweep (every second here) finds the event and a worker delivers it.
    const [got] = await receiver.waitFor(1, 60_000, (r) => r.path === hook.path);
    expect(new Webhook(hook.secret).verify(got?.body ?? '', got?.headers ?? {})).toMatchObject({ agent });
  }, 120_000);
});
