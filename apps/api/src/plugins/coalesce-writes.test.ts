import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesceWritesPlugin } from './coalesce-writes.ts';

/**
 * A server whose route records when it ran and when its answer was handed to the socket;
 * two clients send their requests in the same tick, so one poll phase reads both.
 */
async function serve(coalesce: boolean) {
  const events: string[] = [];
  const app = Fastify({ logger: false });
  if (coalesce) await app.register(coalesceWritesPlugin);
  app.addHook('onRequest', (request, reply, done) => {
    const end = reply.raw.end.bind(reply.raw) as (...args: unknown[]) => unknown;
    reply.raw.end = ((...args: unknown[]) => {
      events.push(`write ${request.headers['x-client']}`);
      return end(...args);
    }) as typeof reply.raw.end;
    done();
  });
  app.post('/echo', async (request) => {
    events.push(`handled ${request.headers['x-client']}`);
    return { echo: (request.body as { value: string }).value };
  });
  app.get('/bad-header', async (_request, reply) => {
    reply.header('x-broken', 'line\nbreak');
    return { never: 'sent' };
  });
  app.get('/sent-twice', async (_request, reply) => {
    // A handler that sends without returning the reply: the answer goes out once.
    reply.send({ once: true });
  });
  app.get('/stream', async (_request, reply) => {
    const { Readable } = await import('node:stream');
    return reply.type('text/plain').send(Readable.from(['a', 'b', 'c']));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { app, events, port };
}

function request(client: string, value: string): string {
  const body = JSON.stringify({ value });
  return (
    `POST /echo HTTP/1.1\r\nhost: x\r\nx-client: ${client}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Reads one whole HTTP answer (headers and a content-length body) from a socket. */
async function answer(socket: Socket): Promise<{ status: number; body: string }> {
  let text = '';
  for (;;) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    text += chunk.toString();
    const split = text.indexOf('\r\n\r\n');
    const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? Number.NaN);
    if (split >= 0 && text.length >= split + 4 + length) {
      return { status: Number(text.slice(9, 12)), body: text.slice(split + 4, split + 4 + length) };
    }
  }
}

async function sendTogether(port: number, events: string[]) {
  const sockets = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
  // One round trip each first, so the server has accepted both and reads both sockets.
  for (const [i, s] of sockets.entries()) {
    const warm = answer(s);
    s.write(request(`warm-${i}`, 'warm'));
    await warm;
  }
  events.length = 0;
  const answers = sockets.map((s) => answer(s));
  sockets[0]?.write(request('a', 'one'));
  sockets[1]?.write(request('b', 'two'));
  const bodies = await Promise.all(answers);
  for (const s of sockets) s.destroy();
  return bodies;
}

describe('coalesced writes', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('writes the answers of one poll phase after every request of it has been handled', async () => {
    const { app, events, port } = await serve(true);
    close = () => app.close();
    const bodies = await sendTogether(port, events);
    expect(bodies).toEqual([
      { status: 200, body: '{"echo":"one"}' },
      { status: 200, body: '{"echo":"two"}' },
    ]);
    expect(events.slice(0, 2).sort()).toEqual(['handled a', 'handled b']);
    expect(events.slice(2).sort()).toEqual(['write a', 'write b']);
  });

  it('without it, each answer is written right after its own request (the case it changes)', async () => {
    const { app, events, port } = await serve(false);
    close = () => app.close();
    await sendTogether(port, events);
    expect(events).toEqual(['handled a', 'write a', 'handled b', 'write b']);
  });

  it('turns an answer that cannot be written into a 500, as Fastify does, instead of an uncaught exception', async () => {
    const { app, port } = await serve(true);
    close = () => app.close();
    const bad = await fetch(`http://127.0.0.1:${port}/bad-header`);
    expect(bad.status).toBe(500);
    const sent = await fetch(`http://127.0.0.1:${port}/sent-twice`);
    expect(sent.status).toBe(200);
    expect(await sent.json()).toEqual({ once: true });
    // The server is still answering.
    expect((await fetch(`http://127.0.0.1:${port}/sent-twice`)).status).toBe(200);
  });

  it('passes streamed payloads and errors through unchanged', async () => {
    const { app } = await serve(true);
    close = () => app.close();
    const streamed = await app.inject({ method: 'GET', url: '/stream' });
    expect(streamed.statusCode).toBe(200);
    expect(streamed.body).toBe('abc');
    const missing = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.statusCode).toBe(404);
    const bad = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{',
    });
    expect(bad.statusCode).toBe(400);
  });
});
