import type { Database } from '@vouch/db';

export type CacheSpace = 'agents' | 'budgets';

/**
 * A per-process cache of hot reads (an agent's score, a budget row), dropped entry by
 * entry by the database's `vouch_cache` notifications, which triggers send at commit for
 * every change from any process. While notifications may be missed (the listening
 * connection is down) nothing is served from the cache and it is emptied.
 */
export interface ReadCache {
  /** Reads through the cache: `load` runs on a miss, and its result is kept unless a change raced it. */
  read<T>(space: CacheSpace, key: string, load: () => Promise<T>): Promise<T>;
  readonly active: boolean;
  size(): number;
  close(): Promise<void>;
}

export const CACHE_CHANNEL = 'vouch_cache';

export async function createReadCache(database: Database, options: { maxEntries?: number } = {}): Promise<ReadCache> {
  const max = options.maxEntries ?? 100_000;
  const entries = new Map<string, unknown>();
  let active = false;
  // Bumped by every invalidation: a load that saw an older epoch must not be stored.
  let epoch = 0;

  const listening = await database.listen(CACHE_CHANNEL, {
    onNotify(payload) {
      epoch++;
      const separator = payload.indexOf(':');
      entries.delete(`${payload.slice(0, separator)}:${payload.slice(separator + 1)}`);
    },
    onReady() {
      epoch++;
      entries.clear();
      active = true;
    },
    onLost() {
      active = false;
      epoch++;
      entries.clear();
    },
  });

  return {
    get active() {
      return active;
    },
    async read<T>(space: CacheSpace, key: string, load: () => Promise<T>): Promise<T> {
      if (!active) return load();
      const id = `${space}:${key}`;
      if (entries.has(id)) {
        // Refresh recency: Map keeps insertion order, the oldest entry is evicted first.
        const value = entries.get(id) as T;
        entries.delete(id);
        entries.set(id, value);
        return value;
      }
      const seen = epoch;
      const value = await load();
      if (active && seen === epoch) {
        entries.set(id, value);
        if (entries.size > max) entries.delete(entries.keys().next().value as string);
      }
      return value;
    },
    size: () => entries.size,
    close: () => listening.close(),
  };
}
