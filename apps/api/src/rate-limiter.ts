import { redisOptionsFromUrl } from '@vouch/jobs';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** The rate-limit buckets (docs/edge.md): every /api route falls in exactly one. */
export type RateBucket = 'default' | 'register' | 'batch' | 'compute';
/** What a limit is counted in: a route's bucket per client, or an organization's shared allowance. */
export type RateCounter = RateBucket | 'organization';

export interface RateLimitOptions {
  /** Requests per window per client, by bucket. */
  limits: Record<RateBucket, number>;
  /** Requests per window shared by all keys of one organization, unless the organization has its own. */
  organizationLimit?: number;
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
  /**
   * Counts one request of `client` in `counter`, against `points` (default: the bucket's limit).
   * Synchronous when this process already holds leased points for the client (no Redis round trip).
   */
  consume(counter: RateCounter, client: string, points?: number): RateDecision | Promise<RateDecision>;
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

  // One limiter per counter and limit: organizations with limits of their own share the
  // counter's keys (`<prefix>:organization:<id>`) but not its number of points.
  const limiters = new Map<string, { limiter: RateLimiterRedis | RateLimiterMemory; points: number }>();
  // In memory too, one counter per counter name whatever its number of points (as the Redis keys
  // are shared): it never refuses by itself, `fromStore` compares what it counted with the limit.
  const memories = new Map<RateCounter, RateLimiterMemory>();
  function limiterFor(counter: RateCounter, points: number) {
    const id = `${counter}:${points}`;
    let entry = limiters.get(id);
    if (!entry) {
      const keyPrefix = `${prefix}:${counter}`;
      let memory = memories.get(counter);
      if (!memory) {
        memory = new RateLimiterMemory({ keyPrefix, points: Number.MAX_SAFE_INTEGER, duration });
        memories.set(counter, memory);
      }
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
      entry = { limiter, points };
      limiters.set(id, entry);
    }
    return entry;
  }
  const defaultPoints = (counter: RateCounter) =>
    counter === 'organization' ? (options.organizationLimit ?? 1000) : options.limits[counter];
  // Shared counters are taken from Redis a few points at a time (leases, see `leaseSize`);
  // per-process counters have nothing to save.
  const leases = client ? new Map<string, Lease>() : null;

  /** Counts `want` points in the store (Redis, or the per-process insurance while Redis is away). */
  async function fromStore(
    entry: { limiter: RateLimiterRedis | RateLimiterMemory; points: number },
    id: string,
    key: string,
    startedAt: number,
    want: number,
  ): Promise<RateDecision> {
    const limit = entry.points;
    let res: RateLimiterRes;
    try {
      res = await entry.limiter.consume(key, want);
    } catch (error) {
      // A refusal arrives as a RateLimiterRes; anything else is a failure of both stores.
      if (!(error instanceof RateLimiterRes)) throw error;
      res = error;
    }
    // The counter before this increment says how much of `want` was still within the limit.
    const before = res.consumedPoints - want;
    const granted = Math.max(0, Math.min(want, limit - before));
    const expiresAt = startedAt + res.msBeforeNext;
    let lease = leases?.get(id);
    let allowed = granted > 0;
    if (leases) {
      if (lease && lease.expiresAt > startedAt) {
        lease.unused += granted;
        lease.counted = Math.max(lease.counted, before + granted);
        if (granted > 0) lease.limit = Math.max(lease.limit, limit);
      } else {
        lease = { unused: granted, counted: before + granted, expiresAt, limit };
        leases.delete(id);
        leases.set(id, lease);
        if (leases.size > MAX_TRACKED_CLIENTS) leases.delete(leases.keys().next().value as string);
      }
      // This request takes one point of the lease: its own grant's, or, when requests asked at once
      // and the counter was spent by the first answers, one those answers brought and left unused.
      allowed = granted > 0 || usable(lease, limit);
      if (allowed) lease.unused--;
    }
    return decision(
      allowed,
      limit,
      lease ?? { unused: 0, counted: before + granted, expiresAt, limit },
      startedAt,
      duration,
    );
  }

  return {
    store: client ? 'redis' : 'memory',

    consume(counter, key, points) {
      const entry = limiterFor(counter, points ?? defaultPoints(counter));
      const id = `${counter}:${key}`;
      const startedAt = performance.now();
      const known = leases?.get(id);
      const current = known && startedAt < known.expiresAt ? known : undefined;
      if (current && usable(current, entry.points)) {
        current.unused--;
        return decision(true, entry.points, current, startedAt, duration);
      }
      return fromStore(entry, id, key, startedAt, current ? leaseSize(entry.points - current.counted) : 1);
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

/**
 * What this process holds of one client's shared counter in the current window: points
 * it has counted in Redis but not used yet, the counter's value after its last increment,
 * and when the window ends (measured from before the increment was sent, so never later
 * than Redis's own expiry).
 */
interface Lease {
  unused: number;
  counted: number;
  expiresAt: number;
  /** The highest limit any of its points were counted under. */
  limit: number;
}

/**
 * Whether the lease has a point for a request under `limit`. Points leased under a higher limit
 * (an organization's own, lowered since) serve only while what was admitted stays below the
 * lower one: what the organization already made counts, and past it the answer is refused at once.
 */
function usable(lease: Lease, limit: number): boolean {
  return lease.unused > 0 && (limit >= lease.limit || lease.counted - lease.unused < limit);
}

/** Clients whose leases are remembered at once; the least recently leased is forgotten first. */
const MAX_TRACKED_CLIENTS = 10_000;
const LEASE_FRACTION = 16;
const MAX_LEASE = 1000;

/**
 * How many points to count in Redis at once, given what was left of the limit the last
 * time Redis answered: a sixteenth of it (at most 1000), and one at a time when little is
 * left or nothing is known, so a client near its limit is counted exactly. Every point
 * counted is a point taken from the shared counter, so replicas together never admit more
 * than the limit; what a replica has leased and not used is lost to the others for the
 * rest of the window (at most a sixteenth of what was left when it leased).
 */
export function leaseSize(remaining: number): number {
  return Math.min(MAX_LEASE, Math.max(1, Math.floor(remaining / LEASE_FRACTION)));
}

function decision(allowed: boolean, limit: number, lease: Lease, now: number, windowSeconds: number): RateDecision {
  // Whole milliseconds: `startedAt + msBeforeNext - startedAt` is not always exactly msBeforeNext.
  const msLeft = Math.max(0, Math.round(lease.expiresAt - now));
  return {
    allowed,
    limit,
    // What this process knows: the shared counter at its last increment, minus its unused points.
    remaining: allowed ? Math.max(0, limit - (lease.counted - lease.unused)) : 0,
    resetSeconds: Math.max(allowed ? 0 : 1, Math.ceil(msLeft / 1000)),
    windowSeconds,
  };
}
