import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DB, Kysely } from '@vouch/db';
import { XMLValidator } from 'fast-xml-parser';
import type { ReadCache } from '../cache/read-cache.ts';
import type { EventsService } from '../events/events.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import {
  contentHash,
  diffSnapshots,
  evmAddressesOf,
  isCalendarDate,
  parseSdnAdvancedXml,
  shrinkProblem,
  unionLists,
} from './sanctions.model.ts';
import * as repo from './sanctions.repository.ts';

/**
 * The OFAC lists shipped with Vouch (see docs/checks.md for their source and date): the
 * `data/sanctions` directory of the repository, found upwards from this module, which
 * runs from its source file or from a bundle under `apps/<app>/dist`.
 */
export const BUNDLED_SANCTIONS_DIR = findUp(dirname(fileURLToPath(import.meta.url)), join('data', 'sanctions'));

function findUp(from: string, target: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, target);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return join(from, target);
  }
}
export const BUNDLED_SNAPSHOT_DATE = '2024-09-27';
/** The content hash of the bundled lists (`contentHash`); a test checks the files still give it. */
export const BUNDLED_SNAPSHOT_HASH = '7a6214ff9851998d2bdd635f2d800276eea51c6c1476e66b2b768c51a61294a2';
const SOURCE_NAME = 'OFAC SDN digital currency addresses';

/** The list a screening used. */
export interface SanctionsSource {
  name: string;
  snapshotDate: string;
  entries: number;
  contentHash: string | null;
}

export interface ScreeningResult {
  address: string;
  /** `listed` or `clear` against the active list; `list_unavailable` when there is none (not a pass). */
  state: 'listed' | 'clear' | 'list_unavailable';
  sanctioned: boolean;
  matchedLists: string[];
  source: SanctionsSource | null;
  checkedAt: number;
}

/** An import refused: it would leave screening against an empty or much smaller list. */
export class SnapshotRefusedError extends Error {
  override name = 'SnapshotRefusedError';
}

export function sourceOf(snapshot: {
  name: string;
  snapshot_date: string;
  entries: number;
  content_hash: string | null;
}): SanctionsSource {
  return {
    name: snapshot.name,
    snapshotDate: snapshot.snapshot_date,
    entries: snapshot.entries,
    contentHash: snapshot.content_hash,
  };
}

export interface ImportResult {
  snapshotId: string;
  name: string;
  snapshotDate: string;
  entries: number;
  contentHash: string;
  added: string[];
  removed: string[];
  /**
   * Registered agents whose status changed with this snapshot (or with an earlier one whose
   * re-scoring was still owed), re-scored; null when the re-scoring failed.
   */
  changedAgents: Array<{ address: string; sanctioned: boolean }> | null;
  /** Why the re-scoring failed (it is owed: done by the next process that starts, or the next import); null when done. */
  rescoreOwed: string | null;
}

export interface SanctionsDeps {
  db: Kysely<DB>;
  clock: Clock;
  /** API processes keep the active list in it (decisions screen three addresses each), dropped at each import. */
  cache?: ReadCache | undefined;
  /** Re-scores agents whose sanctions status changed (the model scores a sanctioned agent 0). */
  rescore?: (addresses: string[]) => Promise<unknown>;
  /** Known agents newly listed are announced (sanctions.hit); none without. */
  events?: EventsService | undefined;
}

/** Reads `ofac_sdn_<ASSET>.txt` files into lists by asset. */
export async function readListDirectory(dir: string): Promise<Record<string, string[]>> {
  const lists: Record<string, string[]> = {};
  for (const file of (await readdir(dir)).sort()) {
    const match = /^ofac_sdn_([A-Z0-9]+)\.txt$/.exec(file);
    if (match?.[1]) lists[match[1]] = evmAddressesOf(await readFile(join(dir, file), 'utf8'));
  }
  return lists;
}

/** The active list, whole: its source and the lists each address is on. */
export interface ActiveList {
  source: SanctionsSource;
  entries: ReadonlyMap<string, readonly string[]>;
}

export function createSanctionsService({ db, clock, rescore, cache, events }: SanctionsDeps) {
  /** The active list (null without one), whole, kept in the read cache: one load serves every screening. */
  function cachedActiveList(cache: ReadCache): Promise<ActiveList | null> {
    return cache.read('sanctions', 'active', async () => {
      const snapshot = await repo.activeSnapshot(db);
      if (!snapshot) return null;
      return { source: sourceOf(snapshot), entries: await repo.entriesOf(db, snapshot.id) };
    });
  }

  /** Screens addresses against the active snapshot and keeps each screening. */
  async function screenMany(addresses: string[], options: { record?: boolean } = {}): Promise<ScreeningResult[]> {
    const now = clock();
    const { snapshot, matches: matched } = await repo.activeMatches(db, addresses);
    const results = addresses.map((address) => {
      const lists = matched.get(address) ?? [];
      return {
        address,
        state: !snapshot ? ('list_unavailable' as const) : lists.length > 0 ? ('listed' as const) : ('clear' as const),
        sanctioned: lists.length > 0,
        matchedLists: lists,
        source: snapshot ? sourceOf(snapshot) : null,
        checkedAt: toUnixSeconds(now),
      };
    });
    if (options.record !== false) {
      await repo.recordScreenings(
        db,
        results.map((r) => ({ address: r.address, sanctioned: r.sanctioned, lists: r.matchedLists })),
        snapshot?.id ?? null,
        now,
      );
    }
    return results;
  }

  /**
   * After an import has committed: re-screens every registered agent and re-scores the known
   * agents (registered or observed) listed or delisted since the last snapshot whose re-scoring
   * was done (this import's changes, and those of any import before it whose re-scoring is still
   * owed), then records that it did. An importer that stops or fails before that leaves it owed,
   * and `finishRescore` does it.
   */
  async function rescoreSince(snapshotId: string) {
    const chain = await repo.unrescoredChain(db, snapshotId);
    const flipped = new Set<string>();
    let newer = await repo.addressesOf(db, snapshotId);
    for (let i = 1; i <= chain.length; i++) {
      const step = chain[i];
      // The chain's last snapshot was re-scored (or is the first one, compared with no list).
      if (step === undefined && chain[i - 1]?.rescored) break;
      const older = step === undefined ? [] : await repo.addressesOf(db, step.id);
      const { added, removed } = diffSnapshots(older, newer);
      for (const address of [...added, ...removed]) flipped.add(address);
      newer = older;
    }
    const screened = await screenMany(await repo.registeredAgents(db));
    const changedAgents = screened
      .filter((r) => flipped.has(r.address))
      .map((r) => ({ address: r.address, sanctioned: r.sanctioned }));
    // Observed agents carry model scores too: a listed one must score 0 like a registered one.
    const known = await repo.knownAmong(db, [...flipped]);
    if (known.length && rescore) await rescore(known);
    await repo.markRescored(db, snapshotId, clock());
    return changedAgents;
  }

  /**
   * The re-scoring an earlier import still owes, if any (its importer stopped or failed before
   * it): run by every process that starts. Returns how many agents it re-scored.
   */
  async function finishRescore(): Promise<number> {
    const owed = await repo.owedRescore(db);
    if (!owed) return 0;
    return (await rescoreSince(owed.id)).length;
  }

  /**
   * Stores a new snapshot and makes it the active one in one transaction, then
   * re-screens every registered agent and re-scores those whose status changed.
   */
  async function importSnapshot(
    v: { name: string; snapshotDate: string; lists: Record<string, string[]> },
    options: { onlyIfNone?: boolean; force?: boolean } = {},
  ): Promise<ImportResult | null> {
    const entries = unionLists(v.lists);
    const hash = contentHash(entries);
    const stored = await db.transaction().execute(async (trx) => {
      // One import at a time, so replicas starting together load the bundled lists once.
      await repo.lockImports(trx);
      // The bundled list is the first snapshot only: a database that had lists and has none active
      // now stays without one (screening refuses) until a list is imported or restored on purpose.
      if (options.onlyIfNone && (await repo.anySnapshot(trx))) return null;
      const previous = await repo.activeSnapshot(trx);
      // Screening against an empty or gutted list would pass everyone: refused unless forced.
      const problem = shrinkProblem(entries.size, previous?.entries ?? null);
      if (problem && (entries.size === 0 || !options.force)) {
        throw new SnapshotRefusedError(
          `${problem}; nothing was changed${entries.size ? ' (--force activates it anyway)' : ''}`,
        );
      }
      const before = previous ? await repo.addressesOf(trx, previous.id) : [];
      const id = await repo.insertSnapshot(trx, {
        name: v.name,
        snapshotDate: v.snapshotDate,
        entries,
        contentHash: hash,
        previousId: previous?.id ?? null,
      });
      await repo.activate(trx, id);
      const at = events?.stamp();
      const hits = at ? await repo.announceHits(trx, { snapshotId: id, previousId: previous?.id ?? null, at }) : 0;
      return { snapshotId: id, hits, ...diffSnapshots(before, entries.keys()) };
    });
    if (!stored) return null;
    if (stored.hits > 0) events?.committed();
    const { snapshotId, added, removed } = stored;
    const result = {
      snapshotId,
      name: v.name,
      snapshotDate: v.snapshotDate,
      entries: entries.size,
      contentHash: hash,
      added,
      removed,
    };
    // The list is active whatever happens next: a re-scoring that fails (the queue away) is owed,
    // said so in the answer, and done by the next process that starts or the next import. An
    // earlier import's owed re-scoring never stands in the way of a new list.
    try {
      return { ...result, changedAgents: await rescoreSince(snapshotId), rescoreOwed: null };
    } catch (error) {
      return { ...result, changedAgents: null, rescoreOwed: (error as Error).message };
    }
  }

  return {
    screenMany,

    /**
     * The agent, its (registered) owner and the counterparty against the active list, and the list
     * itself (null without one); not recorded. API processes screen against their cached copy.
     */
    async forDecision(agent: string, owner: string | null, counterparty: string | null, executor: Kysely<DB> = db) {
      if (cache && executor === db) {
        const list = await cachedActiveList(cache);
        const on = (address: string | null) => address !== null && (list?.entries.has(address) ?? false);
        return { list: list?.source ?? null, agent: on(agent), owner: on(owner), counterparty: on(counterparty) };
      }
      // Past the cache (inside a transaction, or without one): the active snapshot and these
      // addresses' entries, not the whole list.
      const addresses = [agent, owner, counterparty].filter((a): a is string => a !== null);
      const { snapshot, matches: matched } = await repo.activeMatches(executor, addresses);
      const on = (address: string | null) => snapshot !== undefined && address !== null && matched.has(address);
      return {
        list: snapshot ? sourceOf(snapshot) : null,
        agent: on(agent),
        owner: on(owner),
        counterparty: on(counterparty),
      };
    },

    async screen(address: string): Promise<ScreeningResult> {
      const [result] = await screenMany([address]);
      if (!result) throw new Error('screening returned nothing');
      return result;
    },

    activeSnapshot: () => repo.activeSnapshot(db),

    importSnapshot,

    finishRescore,

    /** Loads the bundled lists when no snapshot exists yet (first start or migrate). */
    async ensureBundled(dir = BUNDLED_SANCTIONS_DIR): Promise<ImportResult | null> {
      if (await repo.anySnapshot(db)) return null;
      return importSnapshot(
        { name: SOURCE_NAME, snapshotDate: BUNDLED_SNAPSHOT_DATE, lists: await readListDirectory(dir) },
        { onlyIfNone: true },
      );
    },

    /** Makes the bundled lists the active snapshot again (`npm run sanctions:restore`). */
    async restoreBundled(options: { force?: boolean } = {}, dir = BUNDLED_SANCTIONS_DIR): Promise<ImportResult> {
      const result = await importSnapshot(
        { name: SOURCE_NAME, snapshotDate: BUNDLED_SNAPSHOT_DATE, lists: await readListDirectory(dir) },
        options,
      );
      if (!result) throw new Error('restore stored no snapshot');
      return result;
    },

    /** Imports OFAC's sdn_advanced.xml as a new snapshot (refused if empty or shrunken, unless `force`). */
    async importXml(xml: string, snapshotDate?: string, options: { force?: boolean } = {}): Promise<ImportResult> {
      // A file that is not well-formed (a download cut off, a damaged copy) is not the list: what
      // could be read of it would delist every address in the part that is missing.
      const wellFormed = XMLValidator.validate(xml);
      if (wellFormed !== true) {
        throw new SnapshotRefusedError(
          `the file is not well-formed XML (line ${wellFormed.err.line}: ${wellFormed.err.msg}); nothing was changed`,
        );
      }
      const extract = parseSdnAdvancedXml(xml);
      // The snapshot date is named by every screening: one the file misstates is refused as a
      // --date that is no date is.
      if (snapshotDate === undefined && extract.publishedOn !== null && !isCalendarDate(extract.publishedOn)) {
        throw new SnapshotRefusedError(
          `the file's DateOfIssue (${extract.publishedOn}) is not a date; nothing was changed (--date names the snapshot date)`,
        );
      }
      const date = snapshotDate ?? extract.publishedOn ?? clock().toISOString().slice(0, 10);
      const result = await importSnapshot(
        {
          name: `${SOURCE_NAME} (sdn_advanced.xml)`,
          snapshotDate: date,
          lists: extract.lists,
        },
        options,
      );
      if (!result) throw new Error('import stored no snapshot');
      return result;
    },

    latestScreening: (address: string) => repo.latestScreening(db, address),
  };
}

export type SanctionsService = ReturnType<typeof createSanctionsService>;
