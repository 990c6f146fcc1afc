import { Agent, request } from 'node:http';

/**
 * One keep-alive HTTP connection for paced, one-at-a-time requests (P4). autocannon's
 * `overallRate` sends each second's quota back to back at the start of the second, which
 * is not "20 requests per second"; P4 uses the same evenly paced driver as B5 instead.
 */
export function pacedClient(base: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(base);
  function send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: string }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers:
            payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
          res.on('error', reject);
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('request timed out after 10 s')));
      req.on('error', reject);
      req.end(payload);
    });
  }
  return {
    post: (path: string, body: unknown) => send('POST', path, body),
    get: (path: string) => send('GET', path),
    close() {
      agent.destroy();
    },
  };
}
