import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchFile } from './files.ts';

let server: Server;
let url: string;

beforeAll(async () => {
  // A host that answers at once, then sends its file one byte every 300 ms (about 9 s in all):
  // never silent long enough for a socket timeout.
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(' ');
      if (++sent === 30) {
        clearInterval(timer);
        res.end('{}');
      }
    }, 300);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/feedback.json`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('fetchFile', () => {
  it('gives up on a file not read within the timeout, however steadily its host trickles it', async () => {
    expect(await fetchFile(url, 'any', 1000)).toEqual({
      ok: false,
      status: 'unavailable',
      detail: 'not read within 1000 ms',
      retry: true,
    });
  }, 20_000);

  it('answers a data: URI whose percent-encoding does not decode as invalid for good, without throwing', async () => {
    for (const uri of ['data:application/json,%', 'data:,%E0%A4%A', 'data:,%ff']) {
      expect(await fetchFile(uri, 'off', 1000), uri).toMatchObject({ ok: false, status: 'invalid', retry: false });
    }
    expect(await fetchFile('data:application/json,%7B%7D', 'off', 1000)).toEqual({
      ok: true,
      bytes: Buffer.from('{}'),
    });
  });
});
