import { appDeps, buildApp } from '@vouch/api';
import {
  bearer,
  createKey,
  createOrganizationKey,
  createTestApp,
  createTestRuntime,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

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
});
