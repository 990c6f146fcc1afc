import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got: what a webhook consumer would verify and act on. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The raw body, as signed. */
  body: string;
  at: number;
}

/** How the receiver answers a request: a status (default 200), after a delay, or never (`hang`). */
export interface Answer {
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
  hang?: boolean;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>/hooks` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Sets how the next requests are answered. */
  answer(fn: (request: ReceivedRequest, index: number) => Answer): void;
  /** Resolves once `count` requests have arrived (that match `filter`), or throws after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number, filter?: (r: ReceivedRequest) => boolean): Promise<ReceivedRequest[]>;
  /** Stops listening (connections refused) … */
  down(): Promise<void>;
  /** … and listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real HTTP receiver for webhook deliveries on 127.0.0.1 (node:http), recording every request
 * with its raw body and headers, answering as the test says.
 */
export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let answerWith: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 200 });
  const hanging = new Set<ServerResponse>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]),
        ),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const index = requests.push(received) - 1;
      const answer = answerWith(received, index);
      if (answer.hang) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const reply = () => {
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end('ok');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  };

  let server: Server = createServer(handle);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.close(() => resolve());
      server.closeAllConnections();
    });

  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    requests,
    answer(fn) {
      answerWith = fn;
    },
    async waitFor(count, timeoutMs = 15_000, filter = () => true) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = requests.filter(filter);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) {
          throw new Error(`the receiver got ${matching.length} of ${count} requests within ${timeoutMs} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    down: stop,
    async up() {
      server = createServer(handle);
      await listen(port);
    },
    close: stop,
  };
}
