import { createAuditService, createKeysService, systemActor } from '@vouch/core';
import type { Database, KyselyPlugin } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

/** Holds the answer of the next statement that reads a key row until `open()`. */
function gate() {
  let armed = false;
  let opened = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  let reached = () => {};
  const held = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    async transformResult(args) {
      const row = args.result.rows[0];
      if (armed && row && 'key_hash' in row) {
        armed = false;
        reached();
        await open;
      }
      return args.result;
    },
  };
  return { plugin, arm: () => (armed = true), held, open: () => opened() };
}

// Two statements at once: the embedded database's one connection would wait behind the held answer.
describe.runIf(inject('testDbMode') === 'postgres')('API keys', () => {
  it('a lookup that read the key before its revocation does not put it back in the cache', async () => {
    const g = gate();
    const clock = () => new Date();
    const db = database.db.withPlugin(g.plugin);
    const keys = createKeysService({ db, clock, audit: createAuditService({ db, clock }), cacheMs: 60_000 });
    const actor = systemActor();
    const created = await keys.create(actor, { name: 'racing', scopes: ['read'] });

    g.arm();
    const racing = keys.authenticate(created.key);
    await g.held; // the key is read, active; its answer has not arrived yet
    await keys.revoke(actor, created.id);
    g.open();
    // The request that read it before the revocation goes through: it began before.
    expect(await racing).toMatchObject({ ok: true });
    // The next is refused, on this replica at once.
    expect(await keys.authenticate(created.key)).toEqual({ ok: false, reason: 'revoked' });
  });
});
