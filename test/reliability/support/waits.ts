import { createServer, type Server, Socket } from 'node:net';
import type { App } from '@vouch/api';
import type { BullmqWorkers, JobContext, Processors } from '@vouch/jobs';
import {
  createTestApp,
  createTestRuntime,
  type DisposableRedis,
  freePort,
  startRedisServer,
  type TestContext,
} from '@vouch/testkit';
import { expect } from 'vitest';

/** A promise a test opens when it chooses: a processor awaiting it hangs until then. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

export interface WaitFigures {
  requests: number;
  completed200: number;
  accepted202: number;
  maxMs: number;
  jobIds: string[];
}

/**
 * R8: `requests` queued requests at once; every one must answer 200 (finished) or 202 (with
 * a job id and its Location) within the wait timeout + 1 s, whatever the job is doing.
 */
export async function waitingRequests(
  app: App,
  opts: { requests: number; waitMs: number; url: string; body: (i: number) => unknown },
): Promise<WaitFigures> {
  const answers = await Promise.all(
    Array.from({ length: opts.requests }, async (_, i) => {
      const started = performance.now();
      const res = await app.inject({ method: 'POST', url: opts.url, payload: opts.body(i) as object });
      return { res, ms: performance.now() - started };
    }),
  );
  const jobIds: string[] = [];
  for (const { res, ms } of answers) {
    expect([200, 202], res.body).toContain(res.statusCode);
    expect(ms, `answered after ${Math.round(ms)} ms`).toBeLessThanOrEqual(opts.waitMs + 1000);
    if (res.statusCode === 202) {
      const { jobId } = res.json().data;
      expect(res.headers.location).toBe(`/api/jobs/${jobId}`);
      jobIds.push(jobId);
    }
  }
  return {
    requests: opts.requests,
    completed200: answers.filter((a) => a.res.statusCode === 200).length,
    accepted202: jobIds.length,
    maxMs: Math.round(Math.max(...answers.map((a) => a.ms))),
    jobIds,
  };
}

/** Polls GET /api/jobs/:id until every job has completed; returns how long it took. */
export async function allCompleted(app: App, jobIds: string[], timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  for (const id of jobIds) {
    for (;;) {
      const res = await app.inject({ method: 'GET', url: `/api/jobs/${id}` });
      if (res.statusCode === 200 && res.json().data.status === 'completed') break;
      if (performance.now() - started > timeoutMs) throw new Error(`job ${id} not completed: ${res.body}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return performance.now() - started;
}

export interface LagProxy {
  url: string;
  /** While on, what Redis sends to the events consumers (connections that issued XREAD) is held back. */
  setLagging(on: boolean): void;
  /** Bytes held back so far. */
  held(): number;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of Redis that can make the events consumer lag: connections that
 * send XREAD (BullMQ's QueueEvents) get Redis's answers only when lagging is switched off;
 * every other connection (the producer's commands) passes straight through.
 */
export async function startLagProxy(redisUrl: string): Promise<LagProxy> {
  const target = new URL(redisUrl);
  const port = await freePort();
  let lagging = false;
  let heldBytes = 0;
  const links = new Set<{ client: Socket; upstream: Socket; events: boolean; pending: Buffer[] }>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    const link = { client, upstream, events: false, pending: [] as Buffer[] };
    links.add(link);
    upstream.connect(Number(target.port), target.hostname);
    client.on('data', (chunk: Buffer) => {
      if (!link.events && /XREAD/i.test(chunk.toString('latin1'))) link.events = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (lagging && link.events) {
        heldBytes += chunk.length;
        link.pending.push(chunk);
      } else client.write(chunk);
    });
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${port}`,
    setLagging(on) {
      lagging = on;
      if (!on) {
        for (const link of links) {
          for (const chunk of link.pending.splice(0)) link.client.write(chunk);
        }
      }
    },
    held: () => heldBytes,
    close: async () => {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type VerifyProcessor = Processors['checks.verify'];

/** The real processors with checks.verify held until `held` resolves. */
export function hangingVerify(real: Processors, held: Promise<void>): Processors {
  return {
    ...real,
    'checks.verify': (async (payload: Parameters<VerifyProcessor>[0], ctx: JobContext) => {
      await held;
      return real['checks.verify'](payload, ctx);
    }) as VerifyProcessor,
  };
}

export interface BullmqTestApp {
  t: TestContext;
  redis: DisposableRedis;
  workers: BullmqWorkers;
  close(): Promise<void>;
}

/**
 * The app on BullMQ over a disposable redis-server, with a worker in the test process running
 * `processors`; the producer may reach Redis through another address (a lagging proxy).
 */
export async function bullmqTestApp(opts: {
  waitMs: number;
  processors: (real: Processors) => Processors;
  producerUrl?: (url: string) => Promise<string>;
}): Promise<BullmqTestApp> {
  const redis = await startRedisServer();
  const producerUrl = (await opts.producerUrl?.(redis.url)) ?? redis.url;
  const t = await createTestApp({
    env: { REDIS_URL: producerUrl, BULLMQ_PREFIX: 'r8', JOB_WAIT_TIMEOUT_MS: String(opts.waitMs) },
  });
  // A worker in the test process, straight on Redis, running the test's processors.
  const worker = await createTestRuntime(t.database, {
    role: 'worker',
    env: {
      REDIS_URL: redis.url,
      BULLMQ_PREFIX: 'r8',
      WORKER_CONCURRENCY: '4',
      WORKER_CONCURRENCY_RECOMPUTE: '4',
      SHUTDOWN_TIMEOUT_MS: '2000',
    },
    processors: opts.processors,
    loadSanctions: false,
  });
  const workers = worker.workers as BullmqWorkers;
  await Promise.all(workers.workers.map((w) => w.waitUntilReady()));
  return {
    t,
    redis,
    workers,
    close: async () => {
      await worker.close();
      await t.close();
      await redis.kill();
    },
  };
}
