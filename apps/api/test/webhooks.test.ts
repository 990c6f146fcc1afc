import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { isPrivateAddress, MAX_ATTEMPTS, RETRY_SCHEDULE_MS, systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { RunAgainLater } from '@vouch/jobs';
import {
  createdWebhook,
  type Delivery,
  deliveryList,
  rotatedSecret,
  successEnvelope,
  webhookList,
  webhook as webhookSchema,
} from '@vouch/schemas';
import {
  createAgentWithBudget,
  createTestApp,
  eventsSettled,
  holdTransaction,
  listAllEvents,
  lockWaiters,
  post,
  type Receiver,
  randomAddress,
  startReceiver,
  type TestContext,
  until,
} from '@vouch/testkit';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';

let t: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  t = await createTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
  });
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});
afterEach(() => {
  receiver.answer(() => ({ status: 200 }));
});

const request = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, ...(payload && { payload }) });

let endpoints = 0;

/** An endpoint on the receiver, at a path of its own (`path`), unless `url` says otherwise. */
async function createWebhook(body: { url?: string; eventTypes: string[]; description?: string }) {
  const path = `/hooks/${++endpoints}`;
  const res = await request('POST', '/api/webhooks', { url: `${receiver.url.replace('/hooks', '')}${path}`, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return { ...successEnvelope(createdWebhook).parse(res.json()).data, path };
}

async function deliveries(id: string): Promise<Delivery[]> {
  const res = await request('GET', `/api/webhooks/${id}/deliveries?limit=100`);
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(deliveryList).parse(res.json()).data.deliveries;
}

/** Waits until the endpoint's deliveries satisfy `done`. */
async function deliveriesUntil(id: string, done: (d: Delivery[]) => boolean, timeoutMs = 15_000) {
  let last: Delivery[] = [];
  await until(
    async () => {
      last = await deliveries(id);
      return done(last);
    },
    timeoutMs,
    50,
  ).catch(() => {
    throw new Error(`deliveries never got there: ${JSON.stringify(last)}`);
  });
  return last;
}

const forWebhook = (id: string) => (r: { body: string }) => JSON.parse(r.body).data?.webhookId === id;

/**
 * Verifies a delivery as a receiver whose clock reads the delivery's own time: the library
 * refuses a timestamp five minutes from its clock, and the test's clock may be moved on.
 */
function verifyAsOf(secret: string, got: { body: string; headers: Record<string, string | undefined> }) {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Number(got.headers['webhook-timestamp']) * 1000);
  try {
    return new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
  } finally {
    vi.useRealTimers();
  }
}

/**
 * An endpoint answering 503, and its test delivery after the first attempt failed; with `waited`,
 * as if the retry's wait were over (the database's time it is not sent before is cleared).
 */
async function failedTestDelivery(options: { waited?: boolean } = {}) {
  const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
  receiver.answer(() => ({ status: 503 }));
  await request('POST', `/api/webhooks/${created.id}/test`);
  const [first] = await deliveriesUntil(created.id, (ds) => ds[0]?.attempts === 1);
  const id = String(first?.id).slice(4);
  if (options.waited)
    await sql`UPDATE webhook_deliveries SET not_before = NULL WHERE id = ${id}::bigint`.execute(t.database.db);
  return { created, id };
}

describe('POST /api/webhooks', () => {
  it('creates an endpoint with a Standard Webhooks secret shown once', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused', 'budget.threshold'], description: 'ops' });
    expect(created.id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).toMatchObject({ enabled: true, description: 'ops', failingSince: null });
    expect(created.url).toBe(`${receiver.url.replace('/hooks', '')}${created.path}`);
    const listed = successEnvelope(webhookList).parse((await request('GET', '/api/webhooks')).json()).data;
    const mine = listed.webhooks.find((w) => w.id === created.id);
    expect(mine).toBeDefined();
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    const one = await request('GET', `/api/webhooks/${created.id}`);
    expect(successEnvelope(webhookSchema).parse(one.json()).data.eventTypes).toEqual([
      'spend.refused',
      'budget.threshold',
    ]);
  });

  it('refuses bad endpoints and event types with a 400, storing nothing', async () => {
    const before = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks`.execute(t.database.db);
    const bad = [
      { url: 'ftp://example.com/x', eventTypes: ['spend.refused'] },
      { url: 'not a url', eventTypes: ['spend.refused'] },
      { url: 'https://user:pw@example.com/', eventTypes: ['spend.refused'] },
      { url: 'https://example.com/#frag', eventTypes: ['spend.refused'] },
      { url: 'https://example.com/', eventTypes: [] },
      { url: 'https://example.com/', eventTypes: ['spend.everything'] },
      { url: 'https://example.com/', eventTypes: ['webhook.test'] },
      { url: 'https://example.com/', eventTypes: ['spend.refused', 'spend.refused'] },
      { url: 'https://example.com/', eventTypes: ['spend.refused'], secret: 'whsec_mine' },
      { url: `https://example.com/${'x'.repeat(2100)}`, eventTypes: ['spend.refused'] },
    ];
    for (const body of bad) {
      const res = await request('POST', '/api/webhooks', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks`.execute(t.database.db);
    expect(after.rows[0]?.n).toBe(before.rows[0]?.n);
  });

  it('keeps an endpoint in the form it is requested at', async () => {
    const base = receiver.url.replace('/hooks', '');
    const written = ` ${base.replace('http://', 'HTTP://')}/a/../hooks/\tnormal `;
    const res = await request('POST', '/api/webhooks', { url: written, eventTypes: ['spend.refused'] });
    expect(res.statusCode, res.body).toBe(201);
    const { id, url } = successEnvelope(createdWebhook).parse(res.json()).data;
    expect(url).toBe(`${base}/hooks/normal`);
    const patched = await request('PATCH', `/api/webhooks/${id}`, { url: `${base}/hooks/./again` });
    expect(successEnvelope(webhookSchema).parse(patched.json()).data.url).toBe(`${base}/hooks/again`);
    expect((await request('DELETE', `/api/webhooks/${id}`)).statusCode).toBe(200);
  });

  it('answers 404 for an endpoint that is not there', async () => {
    for (const [method, url] of [
      ['GET', '/api/webhooks/wh_0000000000000000'],
      ['DELETE', '/api/webhooks/wh_0000000000000000'],
      ['POST', '/api/webhooks/wh_0000000000000000/rotate-secret'],
      ['POST', '/api/webhooks/wh_0000000000000000/test'],
      ['GET', '/api/webhooks/wh_0000000000000000/deliveries'],
      ['POST', '/api/webhooks/wh_0000000000000000/deliveries/dlv_1/retry'],
    ] as const) {
      const res = await request(method, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    expect((await request('GET', '/api/webhooks/nope')).statusCode).toBe(400);
  });

  it('keeps an organization to WEBHOOKS_PER_ORGANIZATION endpoints, creations at once included', async () => {
    const small = await createTestApp({ env: { WEBHOOKS_PER_ORGANIZATION: '2', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on' } });
    try {
      const create = (n: number) =>
        small.app.inject({
          method: 'POST',
          url: '/api/webhooks',
          payload: { url: `${receiver.url}/limit/${n}`, eventTypes: ['spend.refused'] },
        });
      const answers = await Promise.all([1, 2, 3, 4, 5].map(create));
      const statuses = answers.map((a) => a.statusCode).sort();
      expect(statuses).toEqual([201, 201, 409, 409, 409]);
      const refused = answers.find((a) => a.statusCode === 409);
      expect(refused?.json().error).toMatchObject({ code: 'WEBHOOK_LIMIT', details: { limit: 2 } });
      const listed = successEnvelope(webhookList).parse((await small.app.inject({ url: '/api/webhooks' })).json()).data;
      expect(listed.webhooks).toHaveLength(2);
      // One deleted, one more may come.
      const first = listed.webhooks[0]?.id;
      expect((await small.app.inject({ method: 'DELETE', url: `/api/webhooks/${first}` })).statusCode).toBe(200);
      expect((await create(6)).statusCode).toBe(201);
      expect((await create(7)).statusCode).toBe(409);
    } finally {
      await small.close();
    }
  });
});

describe('GET /api/webhooks/:id/deliveries', () => {
  it('pages newest first, and refuses a cursor it did not give out, even one that decodes to it', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    for (let i = 0; i < 3; i++) await request('POST', `/api/webhooks/${created.id}/test`);
    const all = await deliveries(created.id);
    const url = `/api/webhooks/${created.id}/deliveries?limit=1`;
    const first = (await request('GET', url)).json().data;
    expect(first.deliveries.map((d: Delivery) => d.id)).toEqual([all[0]?.id]);
    const cursor: string = first.nextCursor;
    const second = await request('GET', `${url}&cursor=${cursor}`);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().data.deliveries.map((d: Delivery) => d.id)).toEqual([all[1]?.id]);
    // Padded, with a character base64url has no use for, with a space: other strings, not this cursor.
    for (const other of [`${cursor}%3D%3D`, `${cursor}.`, `%20${cursor}`, `${cursor}%24`]) {
      const res = await request('GET', `${url}&cursor=${other}`);
      expect(res.statusCode, other).toBe(400);
      expect(res.json().error.details).toEqual([{ path: 'querystring.cursor', message: expect.any(String) }]);
    }
  });
});

describe('delivery', () => {
  it('POSTs each matching event, signed so that the standardwebhooks package verifies it', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused'] });
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' }); // accepted: not subscribed
    // Refused under an Idempotency-Key: the refusal commits with its event, and the fan-out is
    // asked for then (the sweep is an hour away in this file).
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '50' }, { 'idempotency-key': `refused-${agent}` });
    const [got] = await receiver.waitFor(1, 15_000, (r) => r.path === created.path);
    if (!got) throw new Error('no delivery');
    const verified = new Webhook(created.secret).verify(got.body, got.headers) as Record<string, unknown>;
    expect(verified).toMatchObject({ type: 'spend.refused', agent, data: { amount: '50', reason: 'PER_TX_LIMIT' } });
    expect(got.headers['webhook-id']).toBe(verified.id);
    expect(got.headers['webhook-id']).toMatch(/^evt_\d+$/);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Math.floor(Date.parse(verified.timestamp as string) / 1000)).toBe(verified.createdAt);
    // A wrong secret or a changed body does not verify.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32).toString('base64')}`).verify(got.body, got.headers)).toThrow();
    expect(() => new Webhook(created.secret).verify(got.body.replace('50', '51'), got.headers)).toThrow();

    const [d] = await deliveriesUntil(created.id, (ds) => ds[0]?.status === 'succeeded');
    expect(d).toMatchObject({
      eventId: got.headers['webhook-id'],
      eventType: 'spend.refused',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(d?.attemptLog).toEqual([
      { attempt: 1, statusCode: 200, durationMs: expect.any(Number), error: null, at: expect.any(Number) },
    ]);
    // Only the refused spend was delivered to it.
    expect(await deliveries(created.id)).toHaveLength(1);
  });

  it('signs with both secrets for 24 hours after a rotation, and verifies with either', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const rotated = successEnvelope(rotatedSecret).parse(
      (await request('POST', `/api/webhooks/${created.id}/rotate-secret`)).json(),
    ).data;
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.previousSecrets).toEqual([{ expiresAt: rotated.previousSecretExpiresAt }]);
    const test = await request('POST', `/api/webhooks/${created.id}/test`);
    expect(test.statusCode, test.body).toBe(202);
    const [got] = await receiver.waitFor(1, 15_000, forWebhook(created.id));
    if (!got) throw new Error('no delivery');
    expect(got.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    for (const secret of [rotated.secret, created.secret]) {
      expect(new Webhook(secret).verify(got.body, got.headers)).toMatchObject({ type: 'webhook.test' });
    }
    // After the 24 hours only the new secret signs.
    t.clock.advance(24 * 3_600_000 + 1000);
    try {
      await request('POST', `/api/webhooks/${created.id}/test`);
      const [, later] = await receiver.waitFor(2, 15_000, forWebhook(created.id));
      if (!later) throw new Error('no second delivery');
      expect(later.headers['webhook-signature']?.split(' ')).toHaveLength(1);
      expect(verifyAsOf(rotated.secret, later)).toMatchObject({ type: 'webhook.test' });
      expect(() => verifyAsOf(created.secret, later)).toThrow(/signature/i);
      const shown = successEnvelope(webhookSchema).parse((await request('GET', `/api/webhooks/${created.id}`)).json());
      expect(shown.data).toMatchObject({ previousSecretExpiresAt: null, previousSecrets: [] });
    } finally {
      t.clock.advance(-(24 * 3_600_000 + 1000));
    }
  });

  /** Rotates the endpoint's secret with `body`, expecting `status`. */
  async function rotate(id: string, body?: object, status = 200) {
    const res = await request('POST', `/api/webhooks/${id}/rotate-secret`, body);
    expect(res.statusCode, res.body).toBe(status);
    return res;
  }
  const rotated = (res: { json(): unknown }) => successEnvelope(rotatedSecret).parse(res.json()).data;

  it('keeps the first old secret until its own time when the secret is rotated again within it', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const first = rotated(await rotate(created.id));
    t.clock.advance(3_600_000);
    try {
      const second = rotated(await rotate(created.id));
      // The first rotation's answer still holds: its old secret signs until then, the second's an hour longer.
      expect(second.previousSecrets).toEqual([
        { expiresAt: second.previousSecretExpiresAt },
        { expiresAt: first.previousSecretExpiresAt },
      ]);
      expect(second.previousSecretExpiresAt - first.previousSecretExpiresAt).toBe(3600);
      const shown = successEnvelope(webhookSchema).parse((await request('GET', `/api/webhooks/${created.id}`)).json());
      expect(shown.data.previousSecrets).toEqual(second.previousSecrets);

      await request('POST', `/api/webhooks/${created.id}/test`);
      const [got] = await receiver.waitFor(1, 15_000, forWebhook(created.id));
      if (!got) throw new Error('no delivery');
      expect(got.headers['webhook-signature']?.split(' ')).toHaveLength(3);
      for (const secret of [second.secret, first.secret, created.secret]) {
        expect(verifyAsOf(secret, got)).toMatchObject({ type: 'webhook.test' });
      }

      // Past the first rotation's 24 hours: the first old secret stops, the second goes on an hour more.
      t.clock.advance(23 * 3_600_000 + 1000);
      try {
        await request('POST', `/api/webhooks/${created.id}/test`);
        const [, later] = await receiver.waitFor(2, 15_000, forWebhook(created.id));
        if (!later) throw new Error('no second delivery');
        expect(later.headers['webhook-signature']?.split(' ')).toHaveLength(2);
        for (const secret of [second.secret, first.secret]) {
          expect(verifyAsOf(secret, later)).toMatchObject({ type: 'webhook.test' });
        }
        expect(() => verifyAsOf(created.secret, later)).toThrow(/signature/i);
      } finally {
        t.clock.advance(-(23 * 3_600_000 + 1000));
      }
    } finally {
      t.clock.advance(-3_600_000);
    }
  });

  it('stops every previous secret at once when rotated with previousSecretExpiresIn 0', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const first = rotated(await rotate(created.id));
    const second = rotated(await rotate(created.id, { previousSecretExpiresIn: 0 }));
    expect(second.previousSecrets).toEqual([]);
    expect(second.previousSecretExpiresAt).toBeLessThanOrEqual(Math.ceil(t.clock.now.getTime() / 1000));
    await request('POST', `/api/webhooks/${created.id}/test`);
    const [got] = await receiver.waitFor(1, 15_000, forWebhook(created.id));
    if (!got) throw new Error('no delivery');
    expect(got.headers['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(new Webhook(second.secret).verify(got.body, got.headers)).toMatchObject({ type: 'webhook.test' });
    for (const old of [first.secret, created.secret]) {
      expect(() => new Webhook(old).verify(got.body, got.headers)).toThrow(/signature/i);
    }
  });

  it('stops the previous secret on the whole second answered, rotated at any fraction of a second', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    t.clock.advance(500);
    const base = t.clock.now.getTime();
    try {
      const { previousSecretExpiresAt } = rotated(await rotate(created.id, { previousSecretExpiresIn: 60 }));
      /** How many signatures a test delivery sent at `at` (ms) carries. */
      const signaturesAt = async (at: number, n: number) => {
        t.clock.set(new Date(at));
        await request('POST', `/api/webhooks/${created.id}/test`);
        const got = (await receiver.waitFor(n, 15_000, forWebhook(created.id)))[n - 1];
        return got?.headers['webhook-signature']?.split(' ').length;
      };
      // It signs for at least the 60 s asked, and not past the second the rotation answered.
      expect(await signaturesAt(base + 60_000 - 1, 1)).toBe(2);
      expect(await signaturesAt(previousSecretExpiresAt * 1000 + 100, 2)).toBe(1);
    } finally {
      t.clock.set(new Date(base - 500));
    }
  });

  it('keeps at most five previous secrets signing, and a refused rotation changes nothing', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    let last = created.secret;
    for (let i = 0; i < 5; i++) last = rotated(await rotate(created.id, { previousSecretExpiresIn: 600 })).secret;
    // The whole second at or after the 600 s asked.
    const firstStopsAt = Math.ceil((t.clock.now.getTime() + 600_000) / 1000);
    // Refused whatever time it asks for; the answer says when the first of the five stops.
    for (const body of [{}, { previousSecretExpiresIn: 30 }]) {
      const refused = await rotate(created.id, body, 409);
      expect(refused.json()).toMatchObject({
        success: false,
        error: { code: 'WEBHOOK_SECRET_LIMIT', details: { maxPreviousSecrets: 5, firstStopsAt } },
      });
      expect(refused.json().error.message).toMatch(/previousSecretExpiresIn/);
    }
    const shown = successEnvelope(webhookSchema).parse((await request('GET', `/api/webhooks/${created.id}`)).json());
    expect(shown.data.previousSecrets).toEqual(Array.from({ length: 5 }, () => ({ expiresAt: firstStopsAt })));
    const [row] = (
      await sql<{ secret: string }>`SELECT secret FROM webhooks WHERE id = ${created.id}`.execute(t.database.db)
    ).rows;
    expect(row?.secret).toBe(last);
    await request('POST', `/api/webhooks/${created.id}/test`);
    const [got] = await receiver.waitFor(1, 15_000, forWebhook(created.id));
    if (!got) throw new Error('no delivery');
    expect(got.headers['webhook-signature']?.split(' ')).toHaveLength(6);
    expect(new Webhook(last).verify(got.body, got.headers)).toMatchObject({ type: 'webhook.test' });
    // A rotation that stops them all is always possible.
    expect(rotated(await rotate(created.id, { previousSecretExpiresIn: 0 })).previousSecrets).toEqual([]);
  });

  it.each([
    [{ previousSecretExpiresIn: -1 }],
    [{ previousSecretExpiresIn: 86_401 }],
    [{ previousSecretExpiresIn: 1.5 }],
    [{ previousSecretExpiresIn: '60' }],
    [{ previousSecretExpiresIn: null }],
    [{ other: 1 }],
  ])('refuses rotate-secret %j with a 400 and keeps the secret', async (body) => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const res = await rotate(created.id, body, 400);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    const shown = successEnvelope(webhookSchema).parse((await request('GET', `/api/webhooks/${created.id}`)).json());
    expect(shown.data.previousSecrets).toEqual([]);
    const [row] = (
      await sql<{ secret: string }>`SELECT secret FROM webhooks WHERE id = ${created.id}`.execute(t.database.db)
    ).rows;
    expect(row?.secret).toBe(created.secret);
  });

  it('tries again after the backoff while the receiver is down, and delivers once it is back', async () => {
    const down = await startReceiver();
    const created = await createWebhook({ url: down.url, eventTypes: ['webhook.disabled'] });
    await down.down();
    try {
      const started = Date.now();
      await request('POST', `/api/webhooks/${created.id}/test`);
      const [failed] = await deliveriesUntil(created.id, (ds) => ds[0]?.attempts === 1);
      expect(failed).toMatchObject({ status: 'pending', lastStatusCode: null });
      expect(failed?.lastError).toMatch(/ECONNREFUSED|connect/);
      expect(failed?.nextAttemptAt).toBeGreaterThan(0);
      await down.up();
      const [done] = await deliveriesUntil(created.id, (ds) => ds[0]?.status === 'succeeded', 20_000);
      // The second attempt came after the first wait of the schedule.
      expect(Date.now() - started).toBeGreaterThanOrEqual((RETRY_SCHEDULE_MS[0] as number) - 100);
      expect(done?.attemptLog.map((a) => a.statusCode)).toEqual([null, 200]);
      expect(down.requests).toHaveLength(1);
      const [got] = down.requests;
      expect(got?.headers['webhook-id']).toBe(done?.eventId);
    } finally {
      await down.close();
    }
  }, 30_000);

  it('counts an error status, a redirect and a receiver that does not answer in time as failed attempts', async () => {
    for (const [answer, error] of [
      [{ status: 500 }, /answered 500/],
      [{ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }, /redirects are not followed/],
      [{ hang: true }, /no answer within 1000 ms/],
    ] as const) {
      const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
      receiver.answer((r) => (forWebhook(created.id)(r) ? answer : { status: 200 }));
      await request('POST', `/api/webhooks/${created.id}/test`);
      const [d] = await deliveriesUntil(created.id, (ds) => ds[0]?.attempts === 1);
      expect(d?.status).toBe('pending');
      expect(d?.lastError).toMatch(error);
      expect(d?.attemptLog[0]?.durationMs).toBeGreaterThanOrEqual(0);
      // Nothing was followed.
      expect(receiver.requests.filter((r) => r.path === '/elsewhere')).toEqual([]);
      await request('PATCH', `/api/webhooks/${created.id}`, { enabled: false });
    }
  }, 30_000);

  it('stores one attempt when two runs of a delivery send at once, and only that one goes on', async () => {
    const { created, id } = await failedTestDelivery({ waited: true });
    // A job run twice (a worker lost after the attempt's commit, a sweep re-queueing a slow one):
    // both read attempt 1 as the last and send.
    receiver.answer(() => ({ status: 503, delayMs: 300 }));
    const runs = await Promise.allSettled([t.services.webhooks.deliver(id, 1), t.services.webhooks.deliver(id, 1)]);
    const rescheduled = runs.filter((r) => r.status === 'rejected' && r.reason instanceof RunAgainLater);
    expect(rescheduled).toHaveLength(1);
    expect(runs.filter((r) => r.status === 'fulfilled').map((r) => r.value)).toEqual([
      { status: 'pending', attempts: 2 },
    ]);
    const [after] = await deliveries(created.id);
    expect([after?.attempts, after?.attemptLog.length]).toEqual([2, 2]);
    await request('PATCH', `/api/webhooks/${created.id}`, { enabled: false });
  });

  it('sends nothing when its job runs again before the wait is over, and waits out the rest', async () => {
    const { created, id } = await failedTestDelivery();
    const sent = () => receiver.requests.filter(forWebhook(created.id)).length;
    expect(sent()).toBe(1);
    // The job run again at once, as when its worker is lost after storing the attempt and before
    // putting the job back to wait: it is not due for another RETRY_SCHEDULE_MS[0].
    const early = await t.services.webhooks.deliver(id, 1).catch((error: unknown) => error);
    expect(early).toBeInstanceOf(RunAgainLater);
    expect((early as RunAgainLater).delayMs).toBeGreaterThan(0);
    expect((early as RunAgainLater).delayMs).toBeLessThanOrEqual(RETRY_SCHEDULE_MS[0] as number);
    expect(sent()).toBe(1);
    const [after] = await deliveries(created.id);
    expect([after?.status, after?.attempts]).toEqual(['pending', 1]);
    await request('PATCH', `/api/webhooks/${created.id}`, { enabled: false });
  });

  it('gives up after the last attempt of the schedule', async () => {
    const { created, id } = await failedTestDelivery({ waited: true });
    // The attempts before the last one, as if their waits had passed.
    await sql`UPDATE webhook_deliveries SET attempts = ${MAX_ATTEMPTS - 1} WHERE id = ${id}::bigint`.execute(
      t.database.db,
    );
    const result = await t.services.webhooks.deliver(id, 1);
    expect(result).toEqual({ status: 'failed', attempts: MAX_ATTEMPTS });
    const [last] = await deliveries(created.id);
    expect(last).toMatchObject({ status: 'failed', nextAttemptAt: null, lastStatusCode: 503 });
  });
});

describe('an endpoint failing for days', () => {
  it('is disabled, its pending deliveries failed, and an event says so', async () => {
    const watcher = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const failing = await createWebhook({ eventTypes: ['spend.accepted'] });
    receiver.answer((r) => (JSON.parse(r.body).type === 'spend.accepted' ? { status: 500 } : { status: 200 }));
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '100' });
    /** A spend, and the first attempt of its delivery to the failing endpoint. */
    const spendAndFail = async () => {
      const before = (await deliveries(failing.id)).length;
      await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
      await deliveriesUntil(failing.id, (ds) => ds.length === before + 1 && (ds[0]?.attempts ?? 0) >= 1);
    };
    await spendAndFail();
    const since = (await request('GET', `/api/webhooks/${failing.id}`)).json().data.failingSince;
    expect(since).toBeGreaterThan(0);

    // It keeps failing, an event every 8 hours, for five days.
    const step = 8 * 3_600_000;
    let advanced = 0;
    try {
      while (advanced + step < 5 * 86_400_000) {
        t.clock.advance(step);
        advanced += step;
        await spendAndFail();
      }
      expect((await request('GET', `/api/webhooks/${failing.id}`)).json().data).toMatchObject({
        enabled: true,
        failingSince: since,
      });
      t.clock.advance(step);
      advanced += step;
      await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
      await until(async () => !(await request('GET', `/api/webhooks/${failing.id}`)).json().data.enabled, 15_000);
      const state = (await request('GET', `/api/webhooks/${failing.id}`)).json().data;
      expect(state).toMatchObject({
        enabled: false,
        failingSince: since,
        disabledReason: 'no successful delivery for 5 day(s)',
      });
      expect((await deliveries(failing.id)).every((d) => d.status === 'failed')).toBe(true);
      const disabled = await listAllEvents(t.app, t.database, '&type=webhook.disabled');
      expect(disabled.map((e) => e.data)).toContainEqual(
        expect.objectContaining({ webhookId: failing.id, failingSince: since, lastStatusCode: 500 }),
      );
      // Delivered to the organization's other endpoint that subscribes to it.
      await receiver.waitFor(1, 15_000, (r) => {
        const body = JSON.parse(r.body);
        return body.type === 'webhook.disabled' && body.data.webhookId === failing.id;
      });
      // Nothing more goes to it, and its test and retries are refused until it is turned on again.
      expect((await request('POST', `/api/webhooks/${failing.id}/test`)).json().error.code).toBe('WEBHOOK_DISABLED');
      const on = await request('PATCH', `/api/webhooks/${failing.id}`, { enabled: true });
      expect(on.json().data).toMatchObject({ enabled: true, failingSince: null, disabledReason: null });
      expect(watcher.enabled).toBe(true);
    } finally {
      t.clock.advance(-advanced);
    }
  }, 60_000);

  it('is not disabled by a failure after days of quiet: failures that stopped coming are not failing for days', async () => {
    const failing = await createWebhook({ eventTypes: ['spend.accepted'] });
    receiver.answer((r) => (JSON.parse(r.body).type === 'spend.accepted' ? { status: 500 } : { status: 200 }));
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '100' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await deliveriesUntil(failing.id, (ds) => ds[0]?.attempts === 1);
    const first = (await request('GET', `/api/webhooks/${failing.id}`)).json().data.failingSince;
    // Six quiet days, then one more failure: a new failure record, and the endpoint stays on.
    t.clock.advance(6 * 86_400_000);
    try {
      await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
      await deliveriesUntil(failing.id, (ds) => ds.length === 2 && ds[0]?.attempts === 1);
      const state = (await request('GET', `/api/webhooks/${failing.id}`)).json().data;
      expect(state).toMatchObject({ enabled: true, disabledReason: null });
      expect(state.failingSince).toBeGreaterThanOrEqual(first + 6 * 86_400);
      // Another address is another endpoint: its record starts clean.
      const moved = await request('PATCH', `/api/webhooks/${failing.id}`, { url: `${receiver.url}/moved` });
      expect(moved.json().data).toMatchObject({ enabled: true, failingSince: null });
    } finally {
      t.clock.advance(-6 * 86_400_000);
      // Its deliveries' retries would reach the receiver during later tests.
      expect((await request('DELETE', `/api/webhooks/${failing.id}`)).statusCode).toBe(200);
    }
  }, 30_000);
});

describe('retry and replay', () => {
  it('sends a failed delivery again on request, and replays the events of a time range it missed', async () => {
    const created = await createWebhook({ eventTypes: ['spend.accepted'] });
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '100' });
    receiver.answer(() => ({ status: 410 }));
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    const [first] = await deliveriesUntil(created.id, (ds) => ds[0]?.attempts === 1);
    receiver.answer(() => ({ status: 204 }));
    const retried = await request('POST', `/api/webhooks/${created.id}/deliveries/${first?.id}/retry`);
    expect(retried.statusCode, retried.body).toBe(202);
    const [done] = await deliveriesUntil(created.id, (ds) => ds[0]?.status === 'succeeded');
    expect(done?.attemptLog.map((a) => a.statusCode)).toEqual([410, 204]);

    // Turned off while two spends happen: they are not delivered...
    await request('PATCH', `/api/webhooks/${created.id}`, { enabled: false });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '2' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '3' });
    await eventsSettled(t.database);
    await t.services.webhooks.dispatch();
    expect(await deliveries(created.id)).toHaveLength(1);
    const refused = await request('POST', `/api/webhooks/${created.id}/replay`, { since: 0 });
    expect(refused.statusCode).toBe(409);
    // ...until it is on again and they are replayed; the one delivered already is skipped.
    await request('PATCH', `/api/webhooks/${created.id}`, { enabled: true });
    const replay = await request('POST', `/api/webhooks/${created.id}/replay`, { since: 0 });
    expect(replay.statusCode, replay.body).toBe(202);
    // Every spend.accepted of the organization (other tests' too) but the one it received.
    const accepted = await listAllEvents(t.app, t.database, '&type=spend.accepted');
    expect(replay.json().data).toMatchObject({ queued: accepted.length - 1, skipped: 1, complete: true });
    const all = await deliveriesUntil(
      created.id,
      (ds) => ds.length === accepted.length && ds.every((d) => d.status === 'succeeded'),
    );
    const mine = accepted.filter((e) => e.agent === agent);
    expect(mine.map((e) => e.data.amount)).toEqual(['1', '2', '3']);
    for (const e of mine) expect(all.some((d) => d.eventId === e.id)).toBe(true);
    expect((await request('POST', `/api/webhooks/${created.id}/replay`, { since: 10, until: 5 })).statusCode).toBe(400);
    for (const body of [{ since: 1e13 }, { since: 0, until: Number.MAX_SAFE_INTEGER }]) {
      const late = await request('POST', `/api/webhooks/${created.id}/replay`, body);
      expect(late.statusCode, JSON.stringify(body)).toBe(400);
      expect(late.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('refuses a delivery of another endpoint', async () => {
    const a = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const b = await createWebhook({ eventTypes: ['webhook.disabled'] });
    const test = (await request('POST', `/api/webhooks/${a.id}/test`)).json().data;
    const res = await request('POST', `/api/webhooks/${b.id}/deliveries/${test.deliveryId}/retry`);
    expect(res.statusCode).toBe(404);
  });
});

describe('private targets', () => {
  it('are refused when WEBHOOK_ALLOW_PRIVATE_TARGETS is off: literal addresses at once, names when they resolve', async () => {
    const strict = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'off' } });
    try {
      for (const url of [
        'http://127.0.0.1:8080/x',
        'http://localhost/x',
        'http://10.1.2.3/x',
        'http://169.254.169.254/latest/meta-data',
        'http://[::1]/x',
        'http://[::ffff:127.0.0.1]/x',
        'http://[::ffff:0:127.0.0.1]/x',
        'http://0x7f.1/x',
        'http://2130706433/x',
      ]) {
        const res = await strict.app.inject({
          method: 'POST',
          url: '/api/webhooks',
          payload: { url, eventTypes: ['spend.refused'] },
        });
        expect(res.statusCode, url).toBe(400);
        expect(res.json().error.details[0].path).toBe('body.url');
      }
      /** The error of the first attempt of a test delivery to `host`. */
      const firstError = async (host: string) => {
        const res = await strict.app.inject({
          method: 'POST',
          url: '/api/webhooks',
          payload: { url: `http://${host}:${receiver.port}/hooks`, eventTypes: ['webhook.disabled'] },
        });
        expect(res.statusCode, res.body).toBe(201);
        const id = res.json().data.id;
        await strict.app.inject({ method: 'POST', url: `/api/webhooks/${id}/test` });
        let last: Delivery[] = [];
        await until(async () => {
          last = successEnvelope(deliveryList).parse(
            (await strict.app.inject({ method: 'GET', url: `/api/webhooks/${id}/deliveries` })).json(),
          ).data.deliveries;
          return last[0]?.attempts === 1;
        }, 15_000);
        return last[0]?.lastError;
      };
      const refusal = (host: string) =>
        `${host} does not resolve to a public address (unknown, or private): refused (WEBHOOK_ALLOW_PRIVATE_TARGETS)`;
      // A name that does not resolve reads as one refused as private: the log tells no one which internal names exist.
      expect(await firstError('no-such-name.invalid')).toBe(refusal('no-such-name.invalid'));
      // A name is checked against what it resolves to when a delivery connects (DNS rebinding).
      const name = hostname();
      const resolved = await lookup(name, { all: true });
      if (!resolved.every((a) => isPrivateAddress(a.address))) return; // this machine's name is public
      // Counted at this test's own path: other tests' endpoints (at /hooks/<n>) may still get a late retry.
      const here = () => receiver.requests.filter((r) => r.path === '/hooks').length;
      const before = here();
      expect(await firstError(name)).toBe(refusal(name.toLowerCase()));
      expect(here()).toBe(before);
    } finally {
      await strict.close();
    }
  });
});

describe('PATCH and DELETE /api/webhooks/:id', () => {
  it('changes what an endpoint receives, and a deleted one receives nothing more', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused'] });
    const patched = await request('PATCH', `/api/webhooks/${created.id}`, {
      eventTypes: ['spend.accepted'],
      description: null,
    });
    expect(patched.json().data).toMatchObject({ eventTypes: ['spend.accepted'], description: null });
    expect((await request('PATCH', `/api/webhooks/${created.id}`, {})).statusCode).toBe(400);
    expect((await request('PATCH', `/api/webhooks/${created.id}`, { url: 'gopher://x' })).statusCode).toBe(400);
    const deleted = await request('DELETE', `/api/webhooks/${created.id}`);
    expect(deleted.json().data.id).toBe(created.id);
    expect((await request('GET', `/api/webhooks/${created.id}`)).statusCode).toBe(404);
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await eventsSettled(t.database);
    await t.services.webhooks.dispatch();
    const rows = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${created.id}`.execute(t.database.db);
    expect(rows.rows[0]?.n).toBe(0);
  });
});

describe('the sweep', () => {
  it('fans out events written while nothing asked for it, and queues again a due delivery whose job was lost', async () => {
    const created = await createWebhook({ eventTypes: ['budget.threshold'] });
    // An address with no budget: setting one would ask for a fan-out, which the runner may run
    // after the write below and so take the event before the sweep.
    const agent = randomAddress();
    // Fan-outs asked for by earlier tests' commits (one at most every 100 ms) have run their
    // course: from here nothing but the sweep below fans out the event written next.
    await t.services.webhooks.sweep();
    await new Promise((resolve) => setTimeout(resolve, 250));
    await t.services.webhooks.sweep();
    // Written straight through the service, with nothing asking for the fan-out afterwards.
    await t.database.db.transaction().execute((trx) =>
      t.services.events.append(
        trx,
        { organizationId: 'default', kind: 'system', keyId: null, operator: true },
        'budget.threshold',
        agent,
        {
          window: 'daily',
          threshold: 80,
          limit: '10',
          spent: '8',
          held: '0',
          asset: '',
          windowStart: 0,
          resetsAt: 86_400,
          spendId: '1',
          authorizationId: null,
        },
      ),
    );
    await eventsSettled(t.database);
    const swept = await t.services.webhooks.sweep();
    expect(swept.events).toBeGreaterThanOrEqual(1);
    await deliveriesUntil(created.id, (ds) => ds[0]?.status === 'succeeded');

    // A pending delivery due long ago with no job (a restart, Redis lost): queued again by the sweep.
    const [d] = await deliveries(created.id);
    const id = String(d?.id).slice(4);
    await sql`UPDATE webhook_deliveries SET status = 'pending', run = run + 1, next_attempt_at = now() - interval '1 hour'
      WHERE id = ${id}::bigint`.execute(t.database.db);
    const again = await t.services.webhooks.sweep();
    expect(again.requeued).toBeGreaterThanOrEqual(1);
    const [done] = await deliveriesUntil(
      created.id,
      (ds) => ds[0]?.status === 'succeeded' && ds[0].attemptLog.length === 2,
    );
    expect(done?.attemptLog.map((a) => a.statusCode)).toEqual([200, 200]);
  });

  it('queues again a delivery whose job could not be queued at the first sweep 5 s after it was due', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused'] });
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '11' })).statusCode).toBe(422);
    await deliveriesUntil(created.id, (ds) => ds[0]?.status === 'succeeded');
    // As if its job had not been queued: pending again, in a new run, due 6 s ago.
    const [d] = await deliveries(created.id);
    const dueAt = new Date(t.clock.now.getTime() - 6000);
    await sql`UPDATE webhook_deliveries SET status = 'pending', run = run + 1, next_attempt_at = ${dueAt}
      WHERE id = ${String(d?.id).slice(4)}::bigint`.execute(t.database.db);
    expect((await t.services.webhooks.sweep()).requeued).toBeGreaterThanOrEqual(1);
    const [done] = await deliveriesUntil(
      created.id,
      (ds) => ds[0]?.status === 'succeeded' && ds[0].attemptLog.length === 2,
    );
    expect(done?.attemptLog.map((a) => a.statusCode)).toEqual([200, 200]);
  });
});

describe('with EVENTS=off', () => {
  it('still sends again, on the sweep’s schedule, a test delivery whose job was lost', async () => {
    const off = await createTestApp({
      env: { EVENTS: 'off', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '200' },
    });
    try {
      const res = await post(off.app, '/api/webhooks', {
        url: `${receiver.url}/off`,
        eventTypes: ['webhook.disabled'],
      });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json().data.id as string;
      expect((await off.app.inject({ method: 'POST', url: `/api/webhooks/${id}/test` })).statusCode).toBe(202);
      await receiver.waitFor(1, 10_000, (r) => r.path === '/hooks/off');
      // As if its job had been lost (Redis away when it was queued): pending again, due an hour ago.
      const dueAt = new Date(off.clock.now.getTime() - 3_600_000);
      await sql`UPDATE webhook_deliveries SET status = 'pending', run = run + 1, next_attempt_at = ${dueAt}
        WHERE webhook_id = ${id}`.execute(off.database.db);
      // Nothing but the scheduled sweep sends it.
      await receiver.waitFor(2, 10_000, (r) => r.path === '/hooks/off');
    } finally {
      await off.close();
    }
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('events held back by an older transaction', () => {
  it('are fanned out soon after it ends, with no commit or sweep to ask for it', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused'] });
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await t.database.db.transaction().execute(async (older) => {
      // An older transaction with an id of its own, still running when the refusal commits.
      await sql`SELECT pg_current_xact_id()`.execute(older);
      expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '11' })).statusCode).toBe(422);
      // The dispatch sees the event above the horizon: it cannot take it yet.
      await t.services.webhooks.dispatch();
      expect(await deliveries(created.id)).toEqual([]);
    });
    // Nothing commits after it, and the sweep is an hour away: the dispatch asks for itself again.
    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === created.path);
    expect(JSON.parse(got?.body ?? '{}')).toMatchObject({ type: 'spend.refused', agent, data: { amount: '11' } });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('an attempt stored while the endpoint is being disabled', () => {
  it('waits for the disabling to commit, and neither transaction deadlocks', async () => {
    const { created, id } = await failedTestDelivery({ waited: true });
    let attempt: Promise<unknown> | undefined;
    // Turning the endpoint off by hand takes its row, then its pending deliveries' rows; the
    // second attempt is answered meanwhile and stored while the first half is done.
    await t.database.db.transaction().execute(async (trx) => {
      await trx.updateTable('webhooks').set({ enabled: false }).where('id', '=', created.id).execute();
      attempt = t.services.webhooks.deliver(id, 1).then(
        (value) => ({ value }),
        (error: unknown) => ({ error: error instanceof RunAgainLater ? 'RunAgainLater' : String(error) }),
      );
      // The attempt's transaction waits for the endpoint's row.
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      await sql`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL
        WHERE webhook_id = ${created.id} AND status = 'pending'`.execute(trx);
    });
    // The attempt waited for the endpoint, then found its delivery failed: it stores nothing.
    expect(await attempt).toEqual({ value: { status: 'failed', attempts: 1 } });
    const [after] = await deliveries(created.id);
    expect(after).toMatchObject({ status: 'failed', attempts: 1 });
    expect(after?.attemptLog).toHaveLength(1);
  });
});

describe('a replay of a second holding one call’s events, or more', () => {
  /**
   * An endpoint of score.changed and `events` of them written in one second (as a recomputation
   * writes them); deliveries are queued, not sent: what is checked is what the replays queue.
   */
  async function withEvents(events: number, run: (ctx: TestContext, id: string, since: number) => Promise<void>) {
    const ctx = await createTestApp({
      start: '2026-03-15T12:00:00Z',
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
      processors: (real) => ({ ...real, 'webhooks.deliver': async () => ({ status: 'pending', attempts: 0 }) }),
    });
    try {
      const res = await post(ctx.app, '/api/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['score.changed'],
      });
      expect(res.statusCode, res.body).toBe(201);
      await sql`INSERT INTO events (organization_id, type, agent, data, created_at)
        SELECT 'default', 'score.changed', NULL, '{}', '2026-03-15T11:00:00.500Z'::timestamptz
        FROM generate_series(1, ${events}::int)`.execute(ctx.database.db);
      await run(ctx, res.json().data.id as string, Date.parse('2026-03-15T10:00:00Z') / 1000);
    } finally {
      await ctx.close();
    }
  }

  it('goes on from the `until` it answers until every event is queued', async () => {
    // One more than a call replays.
    await withEvents(10_001, async (ctx, id, start) => {
      let since = start;
      const answers = [];
      for (let call = 0; call < 3; call++) {
        const r = await post(ctx.app, `/api/webhooks/${id}/replay`, { since, until: since + 7200 });
        expect(r.statusCode, r.body).toBe(202);
        const data = r.json().data;
        answers.push({ queued: data.queued, skipped: data.skipped, complete: data.complete });
        if (data.complete) break;
        since = data.until;
      }
      expect(answers).toEqual([
        { queued: 10_000, skipped: 0, complete: false },
        { queued: 1, skipped: 10_000, complete: true },
      ]);
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${id}`.execute(ctx.database.db);
      expect(rows[0]?.n).toBe(10_001);
    });
  });

  it('of exactly one call’s events says it is complete, with the range’s own end as `until`', async () => {
    // `complete: false` is "more than 10,000 events of the range were to be sent; replay from `until`".
    await withEvents(10_000, async (ctx, id, since) => {
      const r = await post(ctx.app, `/api/webhooks/${id}/replay`, { since, until: since + 7200 });
      expect(r.statusCode, r.body).toBe(202);
      expect(r.json().data).toEqual({ queued: 10_000, skipped: 0, complete: true, until: since + 7200 });
    });
  });
});

describe('a delivery fanned out as its endpoint was being disabled', () => {
  it('fails alone: the endpoint’s other deliveries keep their own runs, and go out once it is on again', async () => {
    const created = await createWebhook({ eventTypes: ['webhook.disabled'] });
    receiver.answer(() => ({ status: 503 }));
    await request('POST', `/api/webhooks/${created.id}/test`);
    await request('POST', `/api/webhooks/${created.id}/test`);
    const pending = await deliveriesUntil(created.id, (ds) => ds.length === 2 && ds.every((d) => d.attempts === 1));
    const [first, second] = pending.map((d) => String(d.id).slice(4)) as [string, string];
    await sql`UPDATE webhook_deliveries SET not_before = NULL WHERE webhook_id = ${created.id}`.execute(t.database.db);
    // Turned off as a fan-out racing the disabling leaves it: its deliveries still pending.
    await sql`UPDATE webhooks SET enabled = false WHERE id = ${created.id}`.execute(t.database.db);
    expect(await t.services.webhooks.deliver(first, 1)).toEqual({ status: 'failed', attempts: 1 });
    expect((await deliveries(created.id)).map((d) => d.status).sort()).toEqual(['failed', 'pending']);
    // On again: the other one is sent.
    await sql`UPDATE webhooks SET enabled = true WHERE id = ${created.id}`.execute(t.database.db);
    receiver.answer(() => ({ status: 200 }));
    expect(await t.services.webhooks.deliver(second, 1)).toMatchObject({ status: 'succeeded' });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('an organization’s first two endpoints created at once', () => {
  it('the first still hears of an event committed while it was being created', async () => {
    const org = `wh-first-${Date.now()}`;
    await t.services.organizations.create(systemActor(), { id: org, name: org });
    const actor = systemActor(org);
    const url = (n: number) => `${receiver.url.replace('/hooks', '')}/hooks/first-${org}-${n}`;
    // An event of the organization, written by a transaction older than both creations; it
    // commits while the first is under way, with the first endpoint's time (the test's clock).
    const older = await holdTransaction(t.database.db, async (trx) => {
      await sql`SELECT pg_current_xact_id()`.execute(trx);
      await t.services.events.append(trx, actor, 'webhook.test', null, { webhookId: 'wh_x', message: 'meanwhile' });
    });
    // The first creation waits, its endpoint and dispatch position written, for the audit log's head.
    const audit = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM audit_heads WHERE organization_id = ${org} FOR UPDATE`.execute(trx),
    );
    const first = t.services.webhooks.create(actor, { url: url(1), eventTypes: ['webhook.test'] });
    await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
    await older.release();
    const second = t.services.webhooks.create(actor, { url: url(2), eventTypes: ['webhook.test'] });
    await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    await audit.release();
    const [w1] = await Promise.all([first, second]);
    await t.services.webhooks.dispatch();
    const { rows } = await sql<{ message: string }>`
      SELECT e.data->>'message' AS message FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.webhook_id = ${w1.id}`.execute(t.database.db);
    expect(rows).toEqual([{ message: 'meanwhile' }]);
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('a replay while the purge deletes an event of its range', () => {
  it('leaves the event out instead of failing on it', async () => {
    const created = await createWebhook({ eventTypes: ['spend.refused'] });
    // An event past the retention, alone in its hour; the purge has deleted it and not yet committed.
    const at = new Date(t.clock.now.getTime() - 40 * 86_400_000);
    const { rows } = await sql<{ id: string }>`INSERT INTO events (organization_id, type, agent, data, created_at)
      VALUES ('default', 'spend.refused', NULL, '{}', ${at}) RETURNING id::text AS id`.execute(t.database.db);
    const eventId = rows[0]?.id;
    const purge = await holdTransaction(t.database.db, (trx) =>
      sql`DELETE FROM events WHERE id = ${eventId}::bigint`.execute(trx),
    );
    const since = Math.floor(at.getTime() / 1000) - 60;
    const replay = request('POST', `/api/webhooks/${created.id}/replay`, { since, until: since + 3600 });
    // The replay read the event before the delete commits, and waits for it to insert its delivery.
    await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
    await purge.release();
    const res = await replay;
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().data).toMatchObject({ queued: 0, complete: true });
    expect(await deliveries(created.id)).toEqual([]);
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('an endpoint deleted while it is being used', () => {
  /** An organization of its own with one endpoint, and a test delivery of it (for retry). */
  async function endpointOfItsOwn(name: string) {
    const org = `wh-del-${name}-${Date.now()}`;
    await t.services.organizations.create(systemActor(), { id: org, name: org });
    const actor = systemActor(org);
    const url = `${receiver.url.replace('/hooks', '')}/hooks/${org}`;
    const created = await t.services.webhooks.create(actor, { url, eventTypes: ['spend.refused'] });
    const sent = await t.services.webhooks.test(actor, created.id);
    return { org, actor, id: created.id, deliveryId: sent.deliveryId };
  }

  /** Runs `race` while the endpoint's delete has deleted its row and waits, uncommitted, for the audit log. */
  async function duringDelete<T>(org: string, id: string, race: () => Promise<T>): Promise<T> {
    const audit = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM audit_heads WHERE organization_id = ${org} FOR UPDATE`.execute(trx),
    );
    const deleting = t.services.webhooks.remove(systemActor(org), id);
    // Waiting for the audit log, its row deleted: not for the dispatch lock a fan-out under way
    // (the test delivery's) may still hold, before which the endpoint is not deleted yet.
    await until(async () => (await lockWaiters(t.database.db, '%audit_heads%')) >= 1, 10_000, 20);
    const raced = race().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    await audit.release();
    await deleting;
    const outcome = await raced;
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  for (const action of ['test', 'replay', 'retry'] as const) {
    it(`${action} waits for the delete and finds no endpoint (404), writing nothing`, async () => {
      const { org, actor, id, deliveryId } = await endpointOfItsOwn(action);
      const run = {
        test: () => t.services.webhooks.test(actor, id),
        replay: () => t.services.webhooks.replay(actor, id, { since: 0 }),
        retry: () => t.services.webhooks.retry(actor, id, deliveryId),
      }[action];
      const outcome = await duringDelete(org, id, () =>
        run().then(
          () => 'done',
          (error: { code?: string }) => error.code,
        ),
      );
      expect(outcome).toBe('NOT_FOUND');
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${id}`.execute(t.database.db);
      expect(rows[0]?.n).toBe(0);
      const audited = await sql<{ action: string }>`
        SELECT action FROM audit_log WHERE organization_id = ${org} ORDER BY seq`.execute(t.database.db);
      expect(audited.rows.map((r) => r.action)).toEqual([
        'organization.created',
        'webhook.created',
        'webhook.tested',
        'webhook.deleted',
      ]);
    });
  }

  it('a fan-out waits for the delete and leaves the endpoint out, for every organization', async () => {
    const { org, id } = await endpointOfItsOwn('fan-out');
    await sql`INSERT INTO events (organization_id, type, agent, data, created_at)
      VALUES (${org}, 'spend.refused', NULL, '{}', now())`.execute(t.database.db);
    const fanned = await duringDelete(org, id, () => t.services.webhooks.dispatch());
    expect(fanned.deliveries).toBe(0);
  });
});
