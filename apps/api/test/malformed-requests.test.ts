import type { AddressInfo } from 'node:net';
import { failureEnvelope } from '@vouch/schemas';
import { createTestApp, parseHttpAnswers, rawHttp, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
let port: number;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(() => t.close());

/** Sends `request` as is over a socket and returns the status, the X-Request-Id and the body of the answer. */
async function raw(
  request: string,
  to = port,
): Promise<{ status: number; requestId?: string; body: string; text: string }> {
  const text = await rawHttp(to, request);
  const [answer] = parseHttpAnswers(text);
  if (!answer) throw new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`);
  const requestId = answer.headers['x-request-id'];
  return { status: answer.status, ...(requestId && { requestId }), body: answer.body, text };
}

const SECRET_PATH = 'never-echo-me';

/** Every answer carries X-Request-Id, and the envelope repeats it (docs/api.md). */
function expectRequestId(res: { requestId?: string; body: string }) {
  expect(res.requestId).toBeTruthy();
  expect(failureEnvelope.parse(JSON.parse(res.body)).error.requestId).toBe(res.requestId);
}

// Requests the HTTP parser or the router refuse get the same failure envelope as every other error.
describe('requests refused before any route', () => {
  it('answers a URL with bad percent-encoding 400 in the envelope, without echoing it', async () => {
    const res = await raw(
      `GET /api/agents/${SECRET_PATH}%zz HTTP/1.1\r\nHost: x\r\nX-Request-Id: bad-url-1\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    expect(res.requestId).toBe('bad-url-1');
    expectRequestId(res);
    const body = failureEnvelope.parse(JSON.parse(res.body));
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(res.text).not.toContain(SECRET_PATH);
  });

  it('answers headers or a URL over the limit 431 in the envelope, without echoing them', async () => {
    for (const request of [
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${SECRET_PATH}${'a'.repeat(20_000)}\r\n\r\n`,
      `GET /api/agents/${SECRET_PATH}${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ]) {
      const res = await raw(request);
      expect(res.status).toBe(431);
      expect(failureEnvelope.parse(JSON.parse(res.body)).error.code).toBe('HEADERS_TOO_LARGE');
      expectRequestId(res);
      expect(res.text).not.toContain(SECRET_PATH);
    }
  });

  it('answers a request whose body never arrives 408 in the envelope and closes it', async () => {
    const slow = await createTestApp({ edge: { requestTimeoutMs: 300 } });
    try {
      await slow.app.listen({ port: 0, host: '127.0.0.1' });
      const slowPort = (slow.app.server.address() as AddressInfo).port;
      const res = await raw(
        'POST /api/agents/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"addr',
        slowPort,
      );
      expect(res.status).toBe(408);
      expect(failureEnvelope.parse(JSON.parse(res.body)).error.code).toBe('REQUEST_TIMEOUT');
      expectRequestId(res);
    } finally {
      await slow.close();
    }
  });

  it('answers a request line that is not HTTP 400 in the envelope', async () => {
    const res = await raw('THIS IS NOT HTTP\r\n\r\n');
    expect(res.status).toBe(400);
    expect(failureEnvelope.parse(JSON.parse(res.body)).error.code).toBe('VALIDATION_ERROR');
    expectRequestId(res);
  });
});
