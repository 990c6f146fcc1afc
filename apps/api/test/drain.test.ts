import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { sql } from '@vouch/db';
import { failureEnvelope } from '@vouch/schemas';
import { createAgentWithBudget, createTestApp, parseHttpAnswers } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

// A request that arrives on a kept-alive connection while the server drains (app.close with a
// request in flight) is refused like every other: the failure envelope, X-Request-Id, Retry-After.
describe('answers given while the server drains', () => {
  it('a request arriving on a kept-alive connection is answered 503 in the failure envelope with X-Request-Id and Retry-After', async () => {
    const t = await createTestApp();
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    // Keeps request A in flight: its spend waits for the budget row's lock.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const locking = t.database.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM budgets WHERE agent = ${agent} FOR UPDATE`.execute(trx);
      await held;
    });
    await new Promise((r) => setTimeout(r, 100));
    const body = '{"amount":"1"}';
    const requestA = `POST /api/budgets/${agent}/spend HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const requestB = `GET /api/agents/${agent} HTTP/1.1\r\nHost: x\r\nX-Request-Id: drain-b\r\n\r\n`;
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
    });
    const socketClosed = new Promise((r) => socket.on('close', r));
    await new Promise((r) => socket.on('connect', r));
    // A is under way (past the server's request hooks) before the close begins…
    const arrived = new Promise<void>((resolve) => t.app.server.once('request', () => resolve()));
    socket.write(requestA);
    await arrived;
    await new Promise((r) => setTimeout(r, 50));
    const closing = t.app.close();
    // …and B comes once the server has stopped listening, which its close does after its preClose hooks.
    while (t.app.server.listening) await new Promise((r) => setTimeout(r, 10));
    socket.write(requestB);
    await new Promise((r) => setTimeout(r, 200));
    release();
    await locking;
    await Promise.race([socketClosed, new Promise((r) => setTimeout(r, 5000))]);
    socket.destroy();
    await closing;
    await t.runtime.close();
    await t.database.close();

    const answers = parseHttpAnswers(text);
    expect(answers.map((a) => a.status)).toEqual([200, 503]);
    const drained = answers[1]!;
    // docs/api.md: every failure is {success:false, error:{code, message, requestId}}, every
    // response carries X-Request-Id, and a 503 SERVICE_UNAVAILABLE carries Retry-After.
    expect(failureEnvelope.safeParse(JSON.parse(drained.body)).success, drained.body).toBe(true);
    expect(drained.headers['x-request-id']).toBe('drain-b');
    expect(drained.headers['retry-after']).toBeDefined();
    expect(drained.headers.connection).toBe('close');
    expect(JSON.parse(drained.body).error.code).toBe('SERVICE_UNAVAILABLE');
    // docs/edge.md: the security headers are on every response, this one too.
    expect(drained.headers['cache-control']).toBe('no-store');
    expect(drained.headers['x-content-type-options']).toBe('nosniff');
    expect(drained.headers['content-security-policy']).toContain("default-src 'none'");
  }, 60_000);
});
