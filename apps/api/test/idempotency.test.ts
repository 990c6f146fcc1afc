import { DomainError, ServiceUnavailableError } from '@vouch/core';
import { sql } from '@vouch/db';
import { createTestApp, type TestContext } from '@vouch/testkit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotent } from '../src/idempotency.ts';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** What `idempotent` reads of a request under `key`, acting anonymously in the default organization. */
const requestWith = (key: string) =>
  ({
    headers: { 'idempotency-key': key },
    method: 'POST',
    routeOptions: { url: '/api/probe' },
    params: {},
    body: { key },
    principal: null,
    id: `req-${key}`,
  }) as unknown as FastifyRequest;
const reply = {
  code() {
    return this;
  },
  header() {
    return this;
  },
} as unknown as FastifyReply;

describe('the work under an Idempotency-Key', () => {
  it('runs its after-commit effects once its transaction committed, a stored refusal’s too, never when nothing was', async () => {
    const ran: string[] = [];
    const run = (key: string, outcome: () => unknown) =>
      idempotent(t.services, requestWith(key), reply, async (_trx, afterCommit) => {
        afterCommit?.(() => ran.push(key));
        return outcome();
      });
    await run('probe-ok', () => ({ done: true }));
    await expect(
      run('probe-refused', () => {
        throw new DomainError('BUDGET_EXCEEDED', 'refused');
      }),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    // A dependency away: the key's transaction rolls back and stores nothing, so nothing it
    // queued may follow a commit that did not happen.
    await expect(
      run('probe-unavailable', () => {
        throw new ServiceUnavailableError('away');
      }),
    ).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(ran).toEqual(['probe-ok', 'probe-refused']);
    const { rows } = await sql<{ key: string }>`
      SELECT key FROM idempotency_keys WHERE key LIKE 'probe-%' ORDER BY key`.execute(t.database.db);
    expect(rows.map((r) => r.key)).toEqual(['probe-ok', 'probe-refused']);
    // A replay runs no work, and so no effect.
    await expect(run('probe-refused', () => ({}))).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(await run('probe-ok', () => ({ done: false }))).toMatchObject({ data: { done: true } });
    expect(ran).toEqual(['probe-ok', 'probe-refused']);
  });
});
