import { redisOptionsFromUrl } from '@vouch/jobs';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** The limit buckets of DESIGN §2: every /api route falls in exactly one. */
export type RateBucket = 'default' | 'register' | 'batch' | 'compute';

export interface RateLimitOptions {
  /** Requests per window per client, by bucket. */
  limits: Record<RateBucket, number>;
  windowSeconds?: number;
  /** Shared store for every API replica; absent → counters in this process. */
  redisUrl?: string | undefined;
  /** Redis key prefix of the counters. */
  keyPrefix?: string;
  /** Called when the shared store goes away and when it comes back. */
  onStoreChange?: (state: 'unavailable' | 'restored', error?: unknown) => void;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (≥ 1 when refused). */
  resetSeconds: number;
  windowSeconds: number;
}

export interface RateLimiter {
  readonly store: 'redis' | 'memory';
  consume(bucket: RateBucket, client: string): Promise<RateDecision>;
  /** Rejects when the shared store does not answer; null when there is none. */
  ping: (() => Promise<void>) | null;
  close(): Promise<void>;
}

/** A command the limiter sends to Redis gives up after this long and the per-process limiter answers. */
const COMMAND_TIMEOUT_MS = 500;

/**
 * Fixed-window limits per client. With Redis the counters are shared by every API
 * replica; while Redis is unreachable each process falls back to its own in-memory
 * counters with the same limits (never to "unlimited").
 */
export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const duration = options.windowSeconds ?? 60;
  const prefix = options.keyPrefix ?? 'vouch:ratelimit';
  const buckets = Object.keys(options.limits) as RateBucket[];
  let closed = false;
  let client: Redis | undefined;

  if (options.redisUrl) {
    let healthy = true;
    client = new Redis({
      ...redisOptionsFromUrl(options.redisUrl),
      // Fail fast instead of queueing while disconnected: the insurance limiter answers then.
      enableOfflineQueue: false,
      // Under load many requests consume in the same tick: send their commands in one write.
      enableAutoPipelining: true,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      retryStrategy: (times) => (closed ? null : Math.min(times * 200, 2000)),
    });
    // Report transitions only: a reconnect loop must not flood the log.
    client.on('error', (error) => {
      if (healthy && !closed) {
        healthy = false;
        options.onStoreChange?.('unavailable', error);
      }
    });
    client.on('ready', () => {
      if (!healthy) {
        healthy = true;
        options.onStoreChange?.('restored');
      }
    });
  }

  const limiters = new Map(
    buckets.map((bucket) => {
      const points = options.limits[bucket];
      const keyPrefix = `${prefix}:${bucket}`;
      const memory = new RateLimiterMemory({ keyPrefix, points, duration });
      const limiter = client
        ? new RateLimiterRedis({
            storeClient: client,
            keyPrefix,
            points,
            duration,
            rejectIfRedisNotReady: true,
            insuranceLimiter: memory,
          })
        : memory;
      return [bucket, { limiter, points }] as const;
    }),
  );

  return {
    store: client ? 'redis' : 'memory',

    async consume(bucket, key) {
      const entry = limiters.get(bucket) ?? limiters.get('default');
      if (!entry) throw new Error(`no rate limit for bucket ${bucket}`);
      let res: RateLimiterRes;
      let allowed = true;
      try {
        res = await entry.limiter.consume(key);
      } catch (error) {
        // A refusal arrives as a RateLimiterRes; anything else is a failure of both stores.
        if (!(error instanceof RateLimiterRes)) throw error;
        res = error;
        allowed = false;
      }
      const resetSeconds = Math.max(allowed ? 0 : 1, Math.ceil(res.msBeforeNext / 1000));
      return {
        allowed,
        limit: entry.points,
        remaining: Math.max(0, res.remainingPoints),
        resetSeconds,
        windowSeconds: duration,
      };
    },

    ping: client
      ? async () => {
          await client.ping();
        }
      : null,

    async close() {
      closed = true;
      client?.disconnect();
    },
  };
}
