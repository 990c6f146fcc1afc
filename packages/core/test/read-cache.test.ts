import { connect, createServer, type Server, type Socket } from 'node:net';
import { CACHE_CHANNEL, createReadCache } from '@vouch/core';
import { createDatabase, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let direct: Database & { url?: string };
beforeAll(async () => {
  direct = await createTestDatabase();
});
afterAll(() => direct.close());

/**
 * A TCP proxy to PostgreSQL that can go quiet: while quiet it passes nothing either way and keeps
 * every connection open, as a network path that stops answering does; what it held goes on, in
 * order, once it speaks again.
 */
async function quietProxy(target: string) {
  const { hostname, port } = new URL(target);
  let quiet = false;
  let held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(port), hostname);
    const end = () => {
      inbound.destroy();
      outbound.destroy();
    };
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(from);
      from.on('error', end).on('close', end);
      from.on('data', (chunk) => (quiet ? held.push(() => to.write(chunk)) : to.write(chunk)));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as { port: number }).port);
  url.hostname = '127.0.0.1';
  return {
    url: url.toString(),
    setQuiet(on: boolean) {
      quiet = on;
      if (on) return;
      const waiting = held;
      held = [];
      for (const send of waiting) send();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.runIf(inject('testDbMode') === 'postgres')('the read cache on a path to PostgreSQL that goes quiet', () => {
  it('serves nothing once no heartbeat has come back within its lease, and again once one does', async () => {
    const proxy = await quietProxy(direct.url as string);
    const replica = createDatabase({
      databaseUrl: proxy.url,
      listenHeartbeat: { everyMs: 100, timeoutMs: 300 },
      queryTimeoutMs: 1_000,
      connectionTimeoutMs: 500,
    });
    const cache = await createReadCache(replica);
    const read = (value: string) => cache.read('agents', 'a', async () => value);
    try {
      await expect.poll(() => cache.active, { timeout: 5_000 }).toBe(true);
      expect(await read('first')).toBe('first');
      expect(await read('second')).toBe('first'); // a hit

      // The replica's whole path goes quiet: its heartbeats can no longer be sent, so none fails
      // and the connection is not reported lost. Another process changes the agent meanwhile.
      proxy.setQuiet(true);
      await sql`SELECT pg_notify(${CACHE_CHANNEL}, 'agents:a')`.execute(direct.db);
      await expect.poll(() => cache.active, { timeout: 5_000 }).toBe(false);
      expect(await read('third')).toBe('third'); // past the cache, to the database
      expect(await read('fourth')).toBe('fourth'); // and not stored

      // The path speaks again: what it held arrives (the change's drop), then a heartbeat.
      proxy.setQuiet(false);
      await expect.poll(() => cache.active, { timeout: 10_000 }).toBe(true);
      expect(await read('fifth')).toBe('fifth');
      expect(await read('sixth')).toBe('fifth');
    } finally {
      proxy.setQuiet(false);
      await cache.close();
      await replica.close();
      await proxy.close();
    }
  }, 30_000);
});
