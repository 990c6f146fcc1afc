import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type CacheInvalidation, createReadCache, systemActor } from '@vouch/core';
import { CACHE_NOTIFY_ROW_LIMIT, sql } from '@vouch/db';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  get,
  listOnActiveSnapshot,
  post,
  randomAddress,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The read cache is dropped by database notifications, whoever changes the row.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ cache: true });
});
afterAll(() => t.close());

async function eventually<T>(read: () => Promise<T>, expected: T, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (value !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    value = await read();
  }
  return value;
}

/** Observed (unregistered) agents, as inserted by plain SQL. */
const agentRows = (addresses: string[]) =>
  addresses.map((address) => ({
    address,
    is_registered: false,
    owner: null,
    owner_changed_at: null,
    metadata: null,
    score: 0,
    first_seen_at: new Date(),
    registered_at: null,
    updated_at: new Date(),
  }));

describe('read cache', () => {
  it('serves a cached score until its notification arrives', async () => {
    const address = await createAgent(t.app);
    const score = async () => (await get(t.app, `/api/agents/${address}/score`)).json().data.score;
    // Let the registration's own notification arrive first (a load racing it is not kept).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await score()).toBe(0);
    // A change that does not notify (triggers disabled for this transaction) is not seen…
    await t.database.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await trx.updateTable('agents').set({ score: 555 }).where('address', '=', address).execute();
    });
    expect(await score()).toBe(0);
    // …until the notification for that agent comes.
    await sql`SELECT pg_notify('vouch_cache', ${`agents:${address}`})`.execute(t.database.db);
    expect(await eventually(score, 555)).toBe(555);
  });

  it('serves repeated score reads and sees a change made through the API', async () => {
    const address = await createAgent(t.app);
    const score = async () => (await get(t.app, `/api/agents/${address}/score`)).json().data.score;
    expect(await score()).toBe(0);
    expect(await score()).toBe(0);
    await post(t.app, `/api/agents/${address}/score`, { score: 640, reason: '0x' });
    expect(await eventually(score, 640)).toBe(640);
  });

  it('sees a change made behind its back (another process, plain SQL)', async () => {
    const address = await createAgent(t.app);
    const score = async () => (await get(t.app, `/api/agents/${address}/score`)).json().data.score;
    expect(await score()).toBe(0);
    await t.database.db.updateTable('agents').set({ score: 777 }).where('address', '=', address).execute();
    expect(await eventually(score, 777)).toBe(777);
  });

  it('does not keep a 404 once the agent appears', async () => {
    const address = randomAddress();
    const status = async () => (await get(t.app, `/api/agents/${address}/score`)).statusCode;
    expect(await status()).toBe(404);
    await createAgent(t.app, { address });
    expect(await eventually(status, 200)).toBe(200);
  });

  it('checks see every spend', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const remaining = async () =>
      (await post(t.app, `/api/budgets/${address}/check`, { amount: '1' })).json().data.dailyRemaining;
    expect(await remaining()).toBe('100');
    expect((await post(t.app, `/api/budgets/${address}/spend`, { amount: '30' })).statusCode).toBe(200);
    expect(await eventually(remaining, '70')).toBe('70');
    await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: '500' });
    expect(await eventually(remaining, '470')).toBe('470');
  });

  it('a cached budget check sees its agent’s owner change (the owner is screened), whoever changed it', async () => {
    const owner = randomAddress();
    await listOnActiveSnapshot(t.database.db, owner);
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const check = async () => (await post(t.app, `/api/budgets/${address}/check`, { amount: '1' })).json().data;
    // Let the set-up's own notifications arrive first (a load racing them is not kept).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await check()).allowed).toBe(true);
    // Another process changes the owner to a listed address: only the agents row changes.
    await t.database.db.updateTable('agents').set({ owner }).where('address', '=', address).execute();
    expect(await eventually(async () => (await check()).reason, 'SANCTIONED')).toBe('SANCTIONED');
  });

  it('a budget read in a caller’s transaction goes through it, past the cache', async () => {
    // On one connection (PGlite) a cache miss loaded beside the transaction would wait for it forever.
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const key = { organizationId: systemActor().organizationId, agent: address, asset: '' };
    const seen = await t.database.db.transaction().execute(async (trx) => {
      await t.services.budgets.spend(systemActor(), address, { amount: '30' }, trx, () => {});
      return t.services.budgets.budgetOf(key, false, trx);
    });
    // The transaction's own spend, which no read beside it could see before the commit.
    expect(seen?.row.daily_spent).toBe('30');
  });

  it('holds at most maxEntries across both spaces, dropping the entry stored first', async () => {
    const cache = await createReadCache(t.database, { maxEntries: 3 });
    try {
      await expect.poll(() => cache.active).toBe(true);
      const loads: string[] = [];
      const read = (space: 'agents' | 'budgets', key: string) =>
        cache.read(space, key, async () => {
          loads.push(`${space}:${key}`);
          return key.toUpperCase();
        });
      expect(await read('agents', 'a')).toBe('A');
      expect(await read('agents', 'b')).toBe('B');
      expect(await read('budgets', 'a')).toBe('A');
      expect(await read('agents', 'a')).toBe('A'); // a hit: not loaded again
      expect(loads).toEqual(['agents:a', 'agents:b', 'budgets:a']);
      expect(await read('budgets', 'c')).toBe('C'); // a fourth entry: agents:a, stored first, goes
      expect(cache.size()).toBe(3);
      expect(await read('agents', 'b')).toBe('B');
      expect(await read('agents', 'a')).toBe('A');
      expect(loads).toEqual(['agents:a', 'agents:b', 'budgets:a', 'budgets:c', 'agents:a']);
    } finally {
      await cache.close();
    }
  });

  it('a statement changing a few agents announces each; one changing more than 100 announces the table', async () => {
    const payloads: string[] = [];
    const listening = await t.database.listen('vouch_cache', { onNotify: (p) => payloads.push(p) });
    try {
      const few = [randomAddress(), randomAddress()];
      const many = Array.from({ length: CACHE_NOTIFY_ROW_LIMIT + 1 }, () => randomAddress());
      await t.database.db.insertInto('agents').values(agentRows(few)).execute();
      await expect.poll(() => [...payloads].sort()).toEqual(few.map((a) => `agents:${a}`).sort());
      payloads.length = 0;
      await t.database.db.insertInto('agents').values(agentRows(many)).execute();
      await t.database.db.updateTable('agents').set({ score: 1 }).where('address', 'in', few).execute();
      await expect.poll(() => payloads.length).toBe(3);
      expect(payloads[0]).toBe('agents:*');
      expect(payloads.slice(1).sort()).toEqual(few.map((a) => `agents:${a}`).sort());
    } finally {
      await listening.close();
    }
  });

  it('drops every cached agent when a statement changed more than 100', async () => {
    const cached = [await createAgent(t.app), await createAgent(t.app)];
    const score = async (address: string) => (await get(t.app, `/api/agents/${address}/score`)).json().data.score;
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const address of cached) expect(await score(address)).toBe(0);
    // Changed without a notification of their own…
    await t.database.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await trx.updateTable('agents').set({ score: 432 }).where('address', 'in', cached).execute();
    });
    expect(await score(cached[0] as string)).toBe(0);
    // …they are read again once a statement on many other agents announces the whole table.
    const many = Array.from({ length: CACHE_NOTIFY_ROW_LIMIT + 1 }, () => randomAddress());
    await t.database.db.insertInto('agents').values(agentRows(many)).execute();
    for (const address of cached) expect(await eventually(() => score(address), 432)).toBe(432);
  });

  it('publishes each drop on a diagnostics channel: its own write and the notification of it', async () => {
    const seen: CacheInvalidation[] = [];
    const onMessage = (message: unknown) => seen.push(message as CacheInvalidation);
    subscribe('vouch:cache:invalidate', onMessage);
    try {
      const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
      const budget = (source: CacheInvalidation['source']) => ({ space: 'budgets', key: address, source });
      // The set-up's own budget notification first.
      await expect.poll(() => seen).toContainEqual(budget('notification'));
      seen.length = 0;
      await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: '500' });
      // The write's own drop is published before the answer goes out. The notification comes
      // whenever the database delivers it: after the answer, or even before the drop (PGlite
      // delivers it with the statement's result).
      expect(seen).toContainEqual(budget('write'));
      await expect.poll(() => seen.length).toBe(2);
      expect(seen).toContainEqual(budget('notification'));
    } finally {
      unsubscribe('vouch:cache:invalidate', onMessage);
    }
  });

  it('ignores notifications for anything but its two spaces, and keeps working', async () => {
    const address = await createAgent(t.app);
    const score = async () => (await get(t.app, `/api/agents/${address}/score`)).json().data.score;
    expect(await score()).toBe(0);
    for (const payload of ['constructor:x', '__proto__:x', 'spends:x', 'no-separator']) {
      await sql`SELECT pg_notify('vouch_cache', ${payload})`.execute(t.database.db);
    }
    await post(t.app, `/api/agents/${address}/score`, { score: 321, reason: '0x' });
    expect(await eventually(score, 321)).toBe(321);
  });
});
