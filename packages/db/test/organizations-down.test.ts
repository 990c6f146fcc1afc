import { type Actor, systemActor } from '@vouch/core';
import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase, createTestRuntime, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE_ORGANIZATIONS = '20261125020000-transaction-chain-status';

describe('migrating a populated, multi-organization database down past organizations and up again', () => {
  it('succeeds, and no key comes out of it with more rights than it had', async () => {
    const runtime = await createTestRuntime(database);
    const { services } = runtime;
    const operator = systemActor();
    await services.organizations.create(operator, { id: 'beta', name: 'Beta' });
    const beta: Actor = { organizationId: 'beta', kind: 'key', keyId: 'k', operator: false };
    const agent = randomAddress();
    await services.agents.register(beta, { address: agent });
    const usdc = 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
    for (const actor of [beta, systemActor()]) {
      await services.budgets.set(actor, agent, { dailyLimit: '100', monthlyLimit: '1000' });
      const spent = await services.budgets.spend(actor, agent, { amount: '30' });
      await services.budgets.refund(actor, agent, spent.spendId as string, { amount: '10' });
      await services.budgets.set(actor, agent, { asset: usdc, dailyLimit: '100', monthlyLimit: '1000' });
      const held = await services.authorizations.authorize(actor, agent, { amount: '20', asset: usdc });
      await services.authorizations.capture(actor, agent, held.authorizationId, { amount: '5' });
      await services.authorizations.authorize(actor, agent, { amount: '70' }); // 90% of the day: an alert
    }
    // Keys made after organizations existed, with the finer scopes: none of them may spend.
    const approver = await services.keys.create(operator, { name: 'approver', scopes: ['read', 'approve'] });
    const scorer = await services.keys.create(operator, { name: 'scorer', scopes: ['read', 'score'] });
    const writer = await services.keys.create(operator, {
      name: 'writer',
      scopes: ['read', 'spend', 'manage', 'score'],
    });
    await runtime.close();

    const migrator = createMigrator(database.db);
    const down = await migrator.migrateTo(BEFORE_ORGANIZATIONS);
    expect(down.error).toBeUndefined();
    const scopes = await sql<{ id: string; scopes: string[] }>`SELECT id, scopes FROM api_keys`.execute(database.db);
    const of = (id: string) => scopes.rows.find((r) => r.id === id)?.scopes;
    // `write` is spend + manage + score: a key that had all three gets it back.
    expect(of(writer.id)).toEqual(['read', 'write']);
    // A key that could approve, or score, must not be able to spend and manage budgets after a rollback.
    expect({ approver: of(approver.id), scorer: of(scorer.id) }).toEqual({ approver: ['read'], scorer: ['read'] });

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
  });
});
