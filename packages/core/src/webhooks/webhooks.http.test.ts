import { createServer } from 'node:http';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
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

  it('ends an attempt the receiver answers with a protocol switch, a redirect or silence, within its time', async () => {
    // Raw answers, as a receiver may send them: a 101 is not an answer Node reports as one.
    const answers: Record<string, string | null> = {
      switch: 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      redirect:
        'HTTP/1.1 301 Moved Permanently\r\nLocation: https://hooks.example.com/vouch?token=SECRET\r\nContent-Length: 0\r\n\r\n',
      silent: null,
    };
    const server = createTcpServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (data) => {
        const answer = answers[/POST \/(\w+)/.exec(data.toString())?.[1] ?? ''];
        if (answer) socket.write(answer);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const send = (path: string) =>
        postWebhook(`http://127.0.0.1:${port}/${path}`, {}, '{}', { timeoutMs: 1000, allowPrivateTargets: true });
      expect(await send('switch')).toMatchObject({ statusCode: 101, error: expect.stringContaining('101') });
      const redirected = await send('redirect');
      expect(redirected).toEqual({
        statusCode: 301,
        durationMs: expect.any(Number),
        error: 'redirects are not followed (to https://hooks.example.com)',
      });
      expect(await send('silent')).toMatchObject({ statusCode: null, error: 'no answer within 1000 ms' });
    } finally {
      server.close();
    }
  });

  it('fails an attempt whose answer is cut off before its end, as one that never came', async () => {
    // A status line and part of a body, then the connection closes: no whole answer.
    const answers: Record<string, string> = {
      short: 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nten bytes.',
      unfinished: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
      // Without a length, a body ends with its connection: a whole answer.
      untilClose: 'HTTP/1.0 200 OK\r\n\r\nthe body, to the end',
      // Read up to 64 KiB, then closed by the sender: an answer it stopped reading still counts.
      long: `HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n${'x'.repeat(200_000)}`,
    };
    const server = createTcpServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (data) => {
        const answer = answers[/POST \/(\w+)/.exec(data.toString())?.[1] ?? ''];
        if (answer) socket.end(answer);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const send = (path: string) =>
        postWebhook(`http://127.0.0.1:${port}/${path}`, {}, '{}', { timeoutMs: 1000, allowPrivateTargets: true });
      expect(await send('short')).toMatchObject({ statusCode: null, error: expect.stringContaining('cut off') });
      expect(await send('unfinished')).toMatchObject({ statusCode: null, error: expect.stringContaining('cut off') });
      expect(await send('untilClose')).toMatchObject({ statusCode: 200, error: null });
      expect(await send('long')).toMatchObject({ statusCode: 200, error: null });
    } finally {
      server.close();
    }
  });
});
