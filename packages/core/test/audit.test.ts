import { type Actor, type Services, systemActor } from '@vouch/core';
import { type Database, sql } from '@vouch/db';
import { createTestDatabase, createTestRuntime, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
let services: Services;

beforeAll(async () => {
  // The chain test queues a hundred spends on the pool at once, all through one organization's
  // chain: on a loaded machine the last wait longer for a connection than the product's 1 s
  // (which answers 503), and what is tested here is the chain, not that wait.
  database = await createTestDatabase({ connectionTimeoutMs: 30_000 });
  // With the bundled sanctions list, as every API start loads it: without one, every spend is refused.
  ({ services } = await createTestRuntime(database));
});
afterAll(() => database?.close());

const operator = systemActor();

/** A new organization with a few entries in its chain; returns an actor of it. */
async function organizationWithEntries(id: string, entries = 5): Promise<Actor> {
  await services.organizations.create(operator, { id, name: id });
  const actor: Actor = { organizationId: id, kind: 'key', keyId: `${id}-key`, operator: false, requestId: 'req-1' };
  for (let i = 0; i < entries - 1; i++) {
    await services.audit.record(actor, 'test.entry', randomAddress(), { i, note: 'ünïcödé ✓' });
  }
  return actor;
}

/** Runs `change` with the append-only guard lifted, as only a database superuser could. */
async function tamper(change: string) {
  await sql`ALTER TABLE audit_log DISABLE TRIGGER USER`.execute(database.db);
  try {
    await sql.raw(change).execute(database.db);
  } finally {
    await sql`ALTER TABLE audit_log ENABLE TRIGGER USER`.execute(database.db);
  }
}

async function brokenOf(organizationId: string) {
  const result = await services.audit.verify(organizationId);
  return result.broken.map((b) => `${b.seq}: ${b.problem}`);
}

describe('the audit chain', () => {
  it('is broken when its head is removed, edited or not, and an unknown organization checks nothing', async () => {
    await organizationWithEntries('headless', 3);
    await sql`DELETE FROM audit_heads WHERE organization_id = 'headless'`.execute(database.db);
    expect(await brokenOf('headless')).toEqual(['3: no head records the chain, which has 3 entries']);
    await tamper(
      `UPDATE audit_log SET entry = replace(entry, '"i": 1', '"i": 9') WHERE organization_id = 'headless' AND seq = 3`,
    );
    expect(await brokenOf('headless')).toEqual(['3: its hash does not match its content']);
    // Every chain is walked, the headless one included.
    expect((await services.audit.verify()).broken.map((b) => b.organizationId)).toContain('headless');
    // A new organization's chain (its creation) is intact.
    await services.organizations.create(operator, { id: 'quiet', name: 'quiet' });
    expect(await services.audit.verify('quiet')).toEqual({ organizations: 1, entries: 1, broken: [] });
    expect(await services.audit.verify('no-such-organization')).toEqual({ organizations: 0, entries: 0, broken: [] });
  });

  it('is intact after writes, and names the organization, key, request and details of each', async () => {
    await organizationWithEntries('intact', 5);
    const result = await services.audit.verify('intact');
    expect(result).toEqual({ organizations: 1, entries: 5, broken: [] });
    const page = await services.audit.list(systemActor('intact'), { limit: 10 });
    expect(page.entries[0]).toMatchObject({
      seq: '5',
      action: 'test.entry',
      actor: 'key',
      actorKeyId: 'intact-key',
      requestId: 'req-1',
      details: { i: 3, note: 'ünïcödé ✓' },
    });
  });

  it('shows an edited entry, an edited column, a removed entry and a cut-off end', async () => {
    await organizationWithEntries('edited', 4);
    await tamper(
      `UPDATE audit_log SET entry = replace(entry, '"i": 1', '"i": 9') WHERE organization_id = 'edited' AND seq = 3`,
    );
    expect(await brokenOf('edited')).toEqual(['3: its hash does not match its content']);

    await organizationWithEntries('column', 4);
    await tamper(`UPDATE audit_log SET action = 'test.other' WHERE organization_id = 'column' AND seq = 2`);
    expect(await brokenOf('column')).toEqual(['2: its action column differs from the hashed entry']);

    await organizationWithEntries('removed', 4);
    await tamper(`DELETE FROM audit_log WHERE organization_id = 'removed' AND seq = 2`);
    expect(await brokenOf('removed')).toEqual(['3: entry 2 is missing (next is 3)']);

    await organizationWithEntries('cut', 4);
    await tamper(`DELETE FROM audit_log WHERE organization_id = 'cut' AND seq = 4`);
    expect(await brokenOf('cut')).toEqual(['4: the head records entry 4 but the log ends at 3']);
  });

  it('shows an entry rewritten with a hash of its own: the next entry no longer follows', async () => {
    await organizationWithEntries('rehashed', 4);
    await tamper(`UPDATE audit_log SET
        entry = replace(entry, '"i": 0', '"i": 7'),
        hash = encode(sha256(convert_to(prev_hash || E'\\n' || seq::text || E'\\n' || replace(entry, '"i": 0', '"i": 7'), 'UTF8')), 'hex')
      WHERE organization_id = 'rehashed' AND seq = 2`);
    expect(await brokenOf('rehashed')).toEqual(['3: its previous hash is not the hash of the entry before']);
  });

  it('refuses UPDATE, DELETE and TRUNCATE of the log', async () => {
    await organizationWithEntries('guarded', 2);
    for (const statement of [
      `UPDATE audit_log SET action = 'x.y' WHERE organization_id = 'guarded'`,
      `DELETE FROM audit_log WHERE organization_id = 'guarded'`,
      'TRUNCATE audit_log',
    ]) {
      await expect(sql.raw(statement).execute(database.db), statement).rejects.toThrow(/append-only/);
    }
    expect(await brokenOf('guarded')).toEqual([]);
  });

  it('stays one unbroken chain under concurrent writes of one organization', async () => {
    const actor = await organizationWithEntries('busy', 1);
    const agents = Array.from({ length: 20 }, () => randomAddress());
    for (const address of agents) {
      await services.agents.register(actor, { address });
      await services.budgets.set(actor, address, { dailyLimit: '100', monthlyLimit: '1000' });
    }
    // Spends on twenty budgets at once, each appending to the same chain.
    const outcomes = await Promise.allSettled(
      agents.flatMap((address) =>
        Array.from({ length: 5 }, () => services.budgets.spend(actor, address, { amount: '30' })),
      ),
    );
    // Three spends of 30 fit each budget of 100; the other two are refused by it, nothing else.
    const refusals = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [(o.reason as { code?: string }).code ?? String(o.reason)] : [],
    );
    expect(refusals).toEqual(Array.from({ length: 40 }, () => 'BUDGET_EXCEEDED'));
    const result = await services.audit.verify('busy');
    expect(result.broken).toEqual([]);
    // organization.created + 20 registrations + 20 budgets + 100 spends.
    expect(result.entries).toBe(141);
  });
});
