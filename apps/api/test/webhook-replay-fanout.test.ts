import { systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { createTestApp, holdTransaction, latch, lockWaiters, type TestContext, until } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// Deliveries are queued, not sent: what is checked is the two statements that create them.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
    processors: (real) => ({ ...real, 'webhooks.deliver': async () => ({ status: 'pending', attempts: 0 }) }),
  });
});
afterAll(() => t.close());

/** A transaction that takes its id now and, when asked, writes one event of `org` and commits (its id). */
async function eventWriter(org: string) {
  const started = latch();
  const write = latch();
  const done = t.database.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_current_xact_id()`.execute(trx);
    started.open();
    await write.opened;
    const { rows } = await sql<{ id: string }>`INSERT INTO events (organization_id, type, agent, data, created_at)
      VALUES (${org}, 'spend.refused', NULL, '{}', now()) RETURNING id::text AS id`.execute(trx);
    return rows[0]?.id as string;
  });
  await started.opened;
  return {
    commit: () => {
      write.open();
      return done;
    },
  };
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: { code?: string; message?: string }) => ({ error: `${error.code}: ${error.message}` }),
  );

describe.runIf(inject('testDbMode') === 'postgres')('a replay and a fan-out creating the same deliveries', () => {
  it('both go through when the events were written in another order than their transactions began', async () => {
    const org = `lo-wh-${Date.now()}`;
    await t.services.organizations.create(systemActor(), { id: org, name: org });
    const actor = systemActor(org);
    const hook = await t.services.webhooks.create(actor, {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['spend.refused'],
    });

    // Three events whose ids (A < X < B) run against their transactions' ids (B < X < A): the
    // fan-out takes them in transaction order (B, X, A), a replay in id order (A, X, B).
    const b = await eventWriter(org);
    const x = await eventWriter(org);
    const a = await eventWriter(org);
    await a.commit();
    const idX = await x.commit();
    await b.commit();

    // X's delivery is being created by a third transaction: each statement stops there, the replay
    // having created A's, the fan-out B's.
    const gate = await holdTransaction(t.database.db, (trx) =>
      sql`INSERT INTO webhook_deliveries (organization_id, webhook_id, event_id, next_attempt_at, created_at)
        VALUES (${org}, ${hook.id}, ${idX}::bigint, now(), now())`.execute(trx),
    );
    const replaying = settle(t.services.webhooks.replay(actor, hook.id, { since: 0 }));
    await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
    const dispatching = settle(t.services.webhooks.dispatch());
    await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    await gate.release();

    const [replayed, dispatched] = await Promise.all([replaying, dispatching]);
    // Were the two to insert in different orders, PostgreSQL would end one of them (40P01, a deadlock).
    expect({
      replayed: 'error' in replayed ? replayed.error : 'ok',
      dispatched: 'error' in dispatched ? dispatched.error : 'ok',
    }).toEqual({
      replayed: 'ok',
      dispatched: 'ok',
    });
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${hook.id}`.execute(t.database.db);
    expect(rows[0]?.n).toBe(3);
  });
});
