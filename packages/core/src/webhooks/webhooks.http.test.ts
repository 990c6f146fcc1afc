import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { postWebhook } from './webhooks.http.ts';

describe('postWebhook', () => {
  it('answers a refused private target with a result, as it does every other failure', async () => {
    const refused = await postWebhook('http://127.0.0.1:9/hook', {}, '{}', {
      timeoutMs: 1000,
      allowPrivateTargets: false,
    });
    expect(refused).toMatchObject({ statusCode: null, error: expect.stringContaining('refused') });
  });

  it('posts the body with its headers and reports the receiver’s status', async () => {
    const received: Array<{ headers: Record<string, unknown>; body: string }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const result = await postWebhook(`http://127.0.0.1:${port}/hook`, { 'webhook-id': 'evt_1' }, '{"a":1}', {
        timeoutMs: 5000,
        allowPrivateTargets: true,
      });
      expect(result).toMatchObject({ statusCode: 204, error: null });
      expect(received).toEqual([{ headers: expect.objectContaining({ 'webhook-id': 'evt_1' }), body: '{"a":1}' }]);
    } finally {
      server.close();
    }
  });
});
