import { channel } from 'node:diagnostics_channel';
import type { Database } from '@vouch/db';

export type CacheSpace = 'agents' | 'budgets' | 'policies' | 'sanctions';
const SPACES: readonly CacheSpace[] = ['agents', 'budgets', 'policies', 'sanctions'];

/** What the cache publishes on `cacheInvalidations` each time it drops an entry (or a space, `key` `*`). */
export interface CacheInvalidation {
  space: CacheSpace;
  key: string;
  /** `write`: this process's own write, just after its commit; `notification`: another's, on its notification. */
  source: 'write' | 'notification';
}

/**
 * Every drop, for tracing tools (node:diagnostics_channel; the benchmark's X-cache-staleness
 * times commit → drop in another process with it). Publishing is skipped while nobody subscribes.
 */
export const cacheInvalidations = channel('vouch:cache:invalidate');

/**
 * A per-process cache of hot reads (an agent's score, a budget row), dropped entry by
 * entry by the database's `vouch_cache` notifications, which triggers send at commit for
 * every change from any process (`<space>:<key>`, or `<space>:*` for a statement that
 * changed many rows: the whole space goes). While notifications may be missed (the
 * listening connection is down) nothing is served from the cache and it is emptied; while their
 * delivery is not proven of late (no heartbeat back within its lease: the path to the server has
 * gone quiet) nothing is served or stored, and reads go to the database.
 */
export interface ReadCache {
  /** Reads through the cache: `load` runs on a miss, and its result is kept unless a change raced it. */
  read<T>(space: CacheSpace, key: string, load: () => Promise<T>): Promise<T>;
  /**
   * Drops an entry (or, with `*`, a whole space) now: a write of this process calls it after
   * its commit and before it answers, so the next read here sees the write without waiting for
   * the notification. Other processes learn of it from the notification.
   */
  invalidate(space: CacheSpace, key: string): void;
  /** Whether entries are served now: listening, with its delivery proven within the lease. */
  readonly active: boolean;
  size(): number;
  close(): Promise<void>;
}

export const CACHE_CHANNEL = 'vouch_cache';

export async function createReadCache(database: Database, options: { maxEntries?: number } = {}): Promise<ReadCache> {
  const max = options.maxEntries ?? 100_000;
  // One map per space: a lookup needs no composed key.
  const spaces: Record<CacheSpace, Map<string, unknown>> = {
    agents: new Map(),
    budgets: new Map(),
    policies: new Map(),
    sanctions: new Map(),
  };
  const clear = () => {
    for (const space of SPACES) spaces[space].clear();
  };
  const size = () => SPACES.reduce((n, space) => n + spaces[space].size, 0);
  let active = false;
  // Bumped by every invalidation: a load that saw an older epoch must not be stored.
  let epoch = 0;

  const drop = (space: CacheSpace, key: string, source: CacheInvalidation['source']) => {
    epoch++;
    if (key === '*') spaces[space].clear();
    else spaces[space].delete(key);
    if (cacheInvalidations.hasSubscribers)
      cacheInvalidations.publish({ space, key, source } satisfies CacheInvalidation);
  };
  const invalidate = (space: CacheSpace, key: string) => drop(space, key, 'write');

  const listening = await database.listen(CACHE_CHANNEL, {
    onNotify(payload) {
      const separator = payload.indexOf(':');
      const space = payload.slice(0, separator);
      if (!(SPACES as readonly string[]).includes(space)) {
        epoch++;
        return;
      }
      drop(space as CacheSpace, payload.slice(separator + 1), 'notification');
    },
    onReady() {
      epoch++;
      clear();
      active = true;
    },
    onLost() {
      active = false;
      epoch++;
      clear();
    },
  });

  return {
    get active() {
      return active && listening.proven();
    },
    async read<T>(space: CacheSpace, key: string, load: () => Promise<T>): Promise<T> {
      if (!active || !listening.proven()) return load();
      const entries = spaces[space];
      const cached = entries.get(key);
      if (cached !== undefined || entries.has(key)) return cached as T;
      const seen = epoch;
      const value = await load();
      if (active && seen === epoch && listening.proven()) {
        entries.set(key, value);
        if (size() > max) {
          // From the fullest space; maps keep insertion order, so the entry stored first goes.
          const fullest = SPACES.map((s) => spaces[s]).reduce((a, b) => (b.size > a.size ? b : a));
          fullest.delete(fullest.keys().next().value as string);
        }
      }
      return value;
    },
    invalidate,
    size,
    close: () => listening.close(),
  };
}
