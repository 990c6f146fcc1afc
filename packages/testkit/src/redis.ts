import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the shared Redis answers. Under CI=true an unreachable Redis throws, so
 * tests that need it fail instead of skipping.
 */
export async function redisAvailable(): Promise<boolean> {
  try {
    await redisVersion(TEST_REDIS_URL, 2000);
    return true;
  } catch (error) {
    if (process.env.CI === 'true')
      throw new Error(`Redis at ${TEST_REDIS_URL} is unreachable under CI=true: ${(error as Error).message}`);
    console.warn(`[vouch] Redis unreachable at ${TEST_REDIS_URL}; skipping the tests that need it`);
    return false;
  }
}

/** The `redis_version` of the Redis at `url`, connecting once without retries; throws if it does not answer. */
export async function redisVersion(url: string, connectTimeoutMs: number): Promise<string> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: connectTimeoutMs,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const info = await client.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    client.disconnect();
  }
}

/** A BullMQ/rate-limit key prefix of its own (`vouch-<kind>-<random>`) for one test file or benchmark run. */
export function testPrefix(kind = 'test'): string {
  return `vouch-${kind}-${randomBytes(4).toString('hex')}`;
}

/** Deletes every key under a prefix; returns how many there were. */
export async function dropPrefix(prefix: string, redisUrl = TEST_REDIS_URL): Promise<number> {
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return deleted;
}
