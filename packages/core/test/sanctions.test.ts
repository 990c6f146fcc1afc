import {
  BUNDLED_SANCTIONS_DIR,
  BUNDLED_SNAPSHOT_DATE,
  BUNDLED_SNAPSHOT_HASH,
  contentHash,
  readListDirectory,
  type Services,
  SnapshotRefusedError,
  unionLists,
} from '@vouch/core';
import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase, createTestRuntime, randomAddress, seedScoredAgents } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A trust service fails closed: no list, an empty list or a gutted list never screens an
// address clean, and every answer names the list it used.
const LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';

let database: Database;
let services: Services;
beforeAll(async () => {
  database = await createTestDatabase();
  ({ services } = await createTestRuntime(database, { loadSanctions: false }));
});
afterAll(() => database?.close());

const deactivate = () => database.db.updateTable('sanctions_snapshots').set({ is_active: false }).execute();

describe('the bundled list', () => {
  it('has the date and content hash the code states', async () => {
    const entries = unionLists(await readListDirectory(BUNDLED_SANCTIONS_DIR));
    expect(entries.size).toBe(156);
    expect(contentHash(entries)).toBe(BUNDLED_SNAPSHOT_HASH);
    const loaded = await services.sanctions.restoreBundled();
    expect(loaded).toMatchObject({
      snapshotDate: BUNDLED_SNAPSHOT_DATE,
      entries: 156,
      contentHash: BUNDLED_SNAPSHOT_HASH,
    });
  });

  it('is named with its hash by every screening and every verification', async () => {
    const source = { snapshotDate: BUNDLED_SNAPSHOT_DATE, entries: 156, contentHash: BUNDLED_SNAPSHOT_HASH };
    const screening = await services.sanctions.screen(LISTED);
    expect(screening).toMatchObject({ state: 'listed', sanctioned: true, source });
    expect(await services.sanctions.screen(randomAddress())).toMatchObject({ state: 'clear', source });
    const verification = await services.verification.verify(randomAddress());
    expect(verification.sanctionsList).toMatchObject(source);
    expect((await services.verification.list(verification.address))[0]?.sanctionsList).toMatchObject(source);
  });
});

describe('with no active list', () => {
  it('answers list_unavailable and fails the verification check instead of passing it', async () => {
    await deactivate();
    try {
      const screening = await services.sanctions.screen(randomAddress());
      expect(screening).toMatchObject({ state: 'list_unavailable', sanctioned: false, source: null });
      const verification = await services.verification.verify(randomAddress());
      expect(verification.checks.sanctionsScreening).toBe(false);
      expect(verification.checkDetails.sanctionsScreening).toMatch(/no sanctions list is active/);
      expect(verification.sanctionsList).toBeNull();
    } finally {
      await services.sanctions.restoreBundled();
    }
  });

  it('stays without one when a process starts: only a first start loads the bundled list', async () => {
    // A newer list than the bundled one was active; it is gone, and a restart must not put the
    // 2024 list in its place, which would pass every address listed since.
    const bundled = await readListDirectory(BUNDLED_SANCTIONS_DIR);
    await services.sanctions.importSnapshot({
      name: 'newer',
      snapshotDate: '2026-11-27',
      lists: { ...bundled, ETH: [...(bundled.ETH ?? []), randomAddress()] },
    });
    await deactivate();
    try {
      await (await createTestRuntime(database)).close();
      expect(await services.sanctions.activeSnapshot()).toBeUndefined();
      expect(await services.sanctions.screen(randomAddress())).toMatchObject({ state: 'list_unavailable' });
    } finally {
      await services.sanctions.restoreBundled({ force: true });
    }
  });
});

describe('importing a list', () => {
  it('refuses an empty list, even forced, and a list under half the active one unless forced', async () => {
    await expect(
      services.sanctions.importSnapshot({ name: 'empty', snapshotDate: '2026-11-25', lists: {} }, { force: true }),
    ).rejects.toThrow(SnapshotRefusedError);
    const small = { name: 'small', snapshotDate: '2026-11-25', lists: { ETH: [LISTED] } };
    await expect(services.sanctions.importSnapshot(small)).rejects.toThrow(/fewer than half of the active list's 156/);
    expect(await services.sanctions.activeSnapshot()).toMatchObject({ entries: 156 });
    expect(await services.sanctions.importSnapshot(small, { force: true })).toMatchObject({ entries: 1 });
    await services.sanctions.restoreBundled({ force: false });
    expect(await services.sanctions.activeSnapshot()).toMatchObject({
      entries: 156,
      content_hash: BUNDLED_SNAPSHOT_HASH,
    });
  });
});

describe('an import on an install with more registered agents than a statement has parameters', () => {
  it('re-screens every one of them and re-scores the one it lists', async () => {
    // 70,000 > 65,535, the most parameters one statement may carry.
    const agents = await seedScoredAgents(database.db, 70_000);
    try {
      const bundled = await readListDirectory(BUNDLED_SANCTIONS_DIR);
      const listed = agents[12_345] as string;
      const result = await services.sanctions.importSnapshot({
        name: 'with one agent more',
        snapshotDate: '2026-11-26',
        lists: { ...bundled, ETH: [...(bundled.ETH ?? []), listed] },
      });
      expect(result?.changedAgents).toEqual([{ address: listed, sanctioned: true }]);
      const owed = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sanctions_snapshots WHERE rescored_at IS NULL`.execute(database.db);
      expect(owed.rows).toEqual([{ n: 0 }]);
    } finally {
      await services.sanctions.restoreBundled({ force: true });
      await sql`DELETE FROM sanctions_screenings WHERE address = ANY(${agents}::text[])`.execute(database.db);
      await sql`DELETE FROM transactions WHERE agent = ANY(${agents}::text[])`.execute(database.db);
      await sql`DELETE FROM score_events WHERE agent = ANY(${agents}::text[])`.execute(database.db);
      await sql`DELETE FROM agents WHERE address = ANY(${agents}::text[])`.execute(database.db);
    }
  }, 120_000);
});

describe('the migration that added content hashes', () => {
  it('gives snapshots imported before it the hash an import computes', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateDown()).error).toBeUndefined();
    expect((await migrator.migrateUp()).error).toBeUndefined();
    const rows = await sql<{
      content_hash: string;
    }>`SELECT content_hash FROM sanctions_snapshots WHERE is_active`.execute(database.db);
    expect(rows.rows[0]?.content_hash).toBe(BUNDLED_SNAPSHOT_HASH);
  });
});
