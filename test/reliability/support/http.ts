import http from 'node:http';

export interface Answer {
  /** HTTP status; 0 when no answer came (connection refused, reset or timed out). */
  status: number;
  /** Milliseconds from sending to the full answer (or to giving up). */
  ms: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are inspected field by field in tests
  body: any;
  headers: Record<string, string | string[] | undefined>;
  error?: string;
}

export interface HttpClient {
  request(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
    timeoutMs?: number,
  ): Promise<Answer>;
  get(path: string, timeoutMs?: number): Promise<Answer>;
  post(path: string, body: unknown, headers?: Record<string, string>, timeoutMs?: number): Promise<Answer>;
  close(): void;
}

/**
 * A plain HTTP client over node:http with a keep-alive agent holding up to `sockets`
 * connections (so N requests in flight really are N connections), and a hard per-request
 * timeout: a request that hangs comes back as status 0 instead of hanging the test.
 */
export function httpClient(base: string, options: { sockets?: number } = {}): HttpClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.sockets ?? 16 });
  const url = new URL(base);

  function request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    timeoutMs = 15_000,
  ): Promise<Answer> {
    const started = performance.now();
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (answer: Omit<Answer, 'ms'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...answer, ms: performance.now() - started });
      };
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          agent,
          headers: {
            ...(payload !== undefined && {
              'content-type': 'application/json',
              'content-length': String(Buffer.byteLength(payload)),
            }),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => finish({ status: 0, body: null, headers: {}, error: error.message }));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // not JSON: keep the text
            }
            finish({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
          });
        },
      );
      const timer = setTimeout(() => {
        req.destroy(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      req.on('error', (error) => finish({ status: 0, body: null, headers: {}, error: error.message }));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  return {
    request,
    get: (path, timeoutMs) => request('GET', path, undefined, {}, timeoutMs),
    post: (path, body, headers, timeoutMs) => request('POST', path, body, headers, timeoutMs),
    close: () => agent.destroy(),
  };
}
