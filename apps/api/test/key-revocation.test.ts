import { appDeps, buildApp } from '@vouch/api';
import { sql } from '@vouch/db';
import {
  bearer,
  createKey,
  createOrganizationKey,
  createTestApp,
  createTestRuntime,
  holdTransaction,
  lockWaiters,
  type TestContext,
  until,
} from '@vouch/testkit';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

/**
 * docs/edge.md "API keys and scopes": "A revocation takes effect at once on the replica that served
 * it; other replicas cache a looked-up key for at most 5 seconds." Two API apps on one database.
 */
const ADMIN = 'replicas-admin-secret-0123456789abc';
let t: TestContext;
let other: Awaited<ReturnType<typeof buildApp>>;
let closeOther: () => Promise<void>;

beforeAll(async () => {
  t = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
  const runtime = await createTestRuntime(t.database);
  other = await buildApp(
    appDeps(runtime, { logger: undefined, defaultMetrics: false, auth: { mode: 'on', adminKey: ADMIN } }),
  );
  await other.ready();
  closeOther = async () => {
    await other.close();
    await runtime.close();
  };
});
afterAll(async () => {
  await closeOther?.();
  await t?.close();
});

describe('a key already looked up (cached) on this replica', () => {
  it('is refused at once once revoked, and once expired (401 saying which)', async () => {
    const admin = await createOrganizationKey(t.app, ADMIN, 'cache-org');
    const revoked = await createKey(t.app, admin, { name: 'used-then-revoked', scopes: ['read'] });
    const soon = Math.floor(t.clock.now.getTime() / 1000) + 60;
    const expiring = await createKey(t.app, admin, {
      name: 'used-then-expired',
      scopes: ['read'],
      expiresAt: soon,
    } as never);
    for (const key of [revoked, expiring]) {
      expect((await t.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) })).statusCode).toBe(200);
    }
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/api/keys/${revoked.split('_')[1]}`, headers: bearer(admin) }))
        .statusCode,
    ).toBe(200);
    const r = await t.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(revoked) });
    expect([r.statusCode, r.json().error.message]).toEqual([401, 'the API key has been revoked']);
    t.clock.advance(120_000);
    const e = await t.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(expiring) });
    expect([e.statusCode, e.json().error.message]).toEqual([401, 'the API key has expired']);
  });
});

describe('a revoked key on another replica', () => {
  it('is refused there within 5 seconds of its revocation', async () => {
    const admin = await createOrganizationKey(t.app, ADMIN, 'replica-org');
    const key = await createKey(t.app, admin, { name: 'cached-elsewhere', scopes: ['read'] });
    // Looked up (and cached) on the other replica.
    expect((await other.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) })).statusCode).toBe(200);
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/api/keys/${key.split('_')[1]}`,
      headers: bearer(admin),
    });
    expect(revoked.statusCode).toBe(200);
    // At once on the replica that revoked it.
    expect((await t.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) })).statusCode).toBe(401);
    await new Promise((r) => setTimeout(r, 5_200));
    const later = await other.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) });
    expect(later.statusCode, later.body).toBe(401);
    expect(later.json().error.message).toMatch(/revoked/);
  });

  it('manages no key there meanwhile: a 401 that says so, with WWW-Authenticate like every 401', async () => {
    const admin = await createOrganizationKey(t.app, ADMIN, 'replica-manage-org');
    // Looked up (and cached) on the other replica, then revoked by the operator here.
    expect((await other.inject({ method: 'GET', url: '/api/keys', headers: bearer(admin) })).statusCode).toBe(200);
    const id = admin.split('_')[1] as string;
    expect((await t.app.inject({ method: 'DELETE', url: `/api/keys/${id}`, headers: bearer(ADMIN) })).statusCode).toBe(
      200,
    );
    const minted = await other.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'persistence', scopes: ['admin'] },
      headers: bearer(admin),
    });
    expect([minted.statusCode, minted.json().error.code, minted.json().error.message]).toEqual([
      401,
      'UNAUTHORIZED',
      'the API key is revoked',
    ]);
    // docs/edge.md and the OpenAPI document: a 401 carries the scheme to authenticate with.
    expect(minted.headers['www-authenticate']).toBe('Bearer realm="vouch"');
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('a key revoked while a request made with it runs', () => {
  it('writes nothing once its revocation has been answered', async () => {
    const org = 'revoked-while-acting-org';
    // The organization's admin key: it leaked, and the operator revokes it.
    const leaked = await createOrganizationKey(t.app, ADMIN, org);
    const leakedId = leaked.split('_')[1] as string;

    // The organization's audit head, held: every write of the organization waits there, in order.
    const head = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM audit_heads WHERE organization_id = ${org} FOR UPDATE`.execute(trx),
    );
    let revoking: Promise<LightMyRequestResponse> | undefined;
    let minting: Promise<LightMyRequestResponse> | undefined;
    try {
      // The operator's revocation: its UPDATE is made, its audit entry waits for the head.
      revoking = t.app.inject({ method: 'DELETE', url: `/api/keys/${leakedId}`, headers: bearer(ADMIN) });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      // A request with the leaked key, authenticated before the revocation commits: a new admin key.
      minting = t.app.inject({
        method: 'POST',
        url: '/api/keys',
        payload: { name: 'persistence', scopes: ['admin'] },
        headers: bearer(leaked),
      });
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await head.release();
    }
    // The revocation commits first and is answered: from now on the key is revoked.
    expect((await revoking)?.statusCode).toBe(200);
    const minted = await minting;

    const { rows } = await sql<{ seq: number; action: string; actor_key_id: string | null }>`
      SELECT seq::int, action, actor_key_id FROM audit_log WHERE organization_id = ${org} AND seq > 1
      ORDER BY seq`.execute(t.database.db);
    const keys = await t.database.db
      .selectFrom('api_keys')
      .select(['id', 'name'])
      .where('organization_id', '=', org)
      .orderBy('created_at')
      .execute();
    // A key revoked (and answered so) mints no key after its revocation.
    expect({
      minted: minted?.statusCode,
      keys: keys.map((k) => k.name),
      log: rows.map((r) => `${r.action} by ${r.actor_key_id}`),
    }).toEqual({
      minted: 401,
      keys: [`${org}-key`],
      log: [`key.created by admin`, `key.revoked by admin`],
    });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('two keys revoking each other at once', () => {
  it('one revocation goes through and the other is refused: neither is ended as a deadlock', async () => {
    const org = 'mutual-revocation-org';
    const first = await createOrganizationKey(t.app, ADMIN, org);
    const second = await createKey(t.app, first, { name: 'second', scopes: ['admin'] });
    const idOf = (secret: string) => secret.split('_')[1] as string;
    // Both keys' rows, held: each revocation stops at its first lock of them, then both go at once.
    const rows = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM api_keys WHERE organization_id = ${org} FOR UPDATE`.execute(trx),
    );
    let one: Promise<LightMyRequestResponse> | undefined;
    let other: Promise<LightMyRequestResponse> | undefined;
    try {
      one = t.app.inject({ method: 'DELETE', url: `/api/keys/${idOf(second)}`, headers: bearer(first) });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      other = t.app.inject({ method: 'DELETE', url: `/api/keys/${idOf(first)}`, headers: bearer(second) });
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await rows.release();
    }
    const answers = [(await one)?.statusCode, (await other)?.statusCode].sort();
    expect(answers).toEqual([200, 401]);
    const keys = await t.database.db
      .selectFrom('api_keys')
      .select(['name', 'revoked_at'])
      .where('organization_id', '=', org)
      .execute();
    expect(keys.filter((k) => k.revoked_at !== null)).toHaveLength(1);
  });
});
