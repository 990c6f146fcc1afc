import { createDatabase, type Database, sql } from '@vouch/db';
import { createTestDatabase, until } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let database: Database & { url?: string };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

/** The backends of this database's listening connections. */
async function listenerPids(): Promise<number[]> {
  const { rows } = await sql<{ pid: number }>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'vouch-listen'`.execute(
    database.db,
  );
  return rows.map((r) => r.pid);
}

describe.runIf(inject('testDbMode') === 'postgres')('a listening connection on PostgreSQL', () => {
  it('delivers notifications, not its heartbeats, and counts as lost when it stops delivering without an error', async () => {
    const listening = createDatabase({ databaseUrl: database.url, listenHeartbeat: { everyMs: 100, timeoutMs: 400 } });
    const events: string[] = [];
    const notified: string[] = [];
    const listener = await listening.listen('vouch_heartbeat_test', {
      onNotify: (payload) => notified.push(payload),
      onReady: () => events.push('ready'),
      onLost: (error) => events.push(`lost: ${(error as Error).message}`),
    });
    const stopped: number[] = [];
    try {
      await until(async () => events.includes('ready'), 5_000);
      await sql`SELECT pg_notify('vouch_heartbeat_test', 'hello')`.execute(database.db);
      await until(async () => notified.includes('hello'), 5_000);
      // Several heartbeats go by; none reaches the handler.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(notified).toEqual(['hello']);
      expect(events).toEqual(['ready']);

      // Its server process stops answering: no error, no end, only silence.
      const [pid] = await listenerPids();
      if (!pid) throw new Error('no listening backend');
      process.kill(pid, 'SIGSTOP');
      stopped.push(pid);
      await until(async () => events.length > 1, 5_000);
      expect(events[1]).toMatch(/^lost: listen connection did not deliver its heartbeat within 400 ms/);
      // It connects again and is ready once a heartbeat has come back on the new connection.
      await until(async () => events.length > 2, 5_000);
      expect(events[2]).toBe('ready');
      await sql`SELECT pg_notify('vouch_heartbeat_test', 'again')`.execute(database.db);
      await until(async () => notified.includes('again'), 5_000);
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
      await listener.close();
      await listening.close();
    }
  });
});
