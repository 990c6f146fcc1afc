import { checksOptions, loadConfig } from '@vouch/config';
import { type ChainReader, createVerificationService } from '@vouch/core';
import type { Database, DB, Kysely } from '@vouch/db';
import { sql } from '@vouch/db';
import { createScreenedDatabase, randomAddress, randomTxHash } from '@vouch/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

// On the bundled lists: one on the ETH list, one only on the USDT list.
const ETH_LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const USDT_ONLY = '0x175d44451403edf28469df03a9280c1197adb92c';
const DAY_MS = 86_400_000;

type Plugin = Parameters<Kysely<DB>['withPlugin']>[0];

/** The kind of each statement the database executed through `db` (subqueries are not statements; the read and the store are raw statements calling `vouch_verification_facts`). */
function countingDb(db: Kysely<DB>) {
  const kinds = new Map<unknown, string>();
  const executed: string[] = [];
  const plugin: Plugin = {
    transformQuery: ({ node, queryId }) => {
      kinds.set(queryId, node.kind);
      return node;
    },
    transformResult: async ({ result, queryId }) => {
      executed.push(kinds.get(queryId) ?? 'unknown');
      return result;
    },
  };
  return { db: db.withPlugin(plugin), executed };
}

let database: Database;
let snapshotId: string;
const clock = { now: new Date('2026-11-20T12:00:00Z') };

beforeAll(async () => {
  database = await createScreenedDatabase(() => clock.now);
  const active = await database.db
    .selectFrom('sanctions_snapshots')
    .select('id')
    .where('is_active', '=', true)
    .executeTakeFirstOrThrow();
  snapshotId = active.id; // as the driver returns a bigint
});
afterAll(() => database.close());
beforeEach(() => {
  clock.now = new Date(clock.now.getTime() + 60_000);
});

function verifier(chain: Pick<ChainReader, 'hasCode' | 'owner'> | null = null) {
  const counted = countingDb(database.db);
  const service = createVerificationService({
    db: counted.db,
    clock: () => clock.now,
    chain,
    thresholds: checksOptions(loadConfig({})).verification,
  });
  return { verify: service.verify, executed: counted.executed };
}

async function insertAgent(v: { owner: string | null; firstSeenDaysAgo: number; score: number }) {
  const address = randomAddress();
  const firstSeen = new Date(clock.now.getTime() - v.firstSeenDaysAgo * DAY_MS);
  await database.db
    .insertInto('agents')
    .values({
      address,
      is_registered: true,
      owner: v.owner,
      owner_changed_at: null,
      metadata: null,
      score: v.score,
      first_seen_at: firstSeen,
      registered_at: firstSeen,
      updated_at: firstSeen,
    })
    .execute();
  return address;
}

async function insertTx(agent: string, daysAgo: number) {
  const at = new Date(clock.now.getTime() - daysAgo * DAY_MS);
  await database.db
    .insertInto('transactions')
    .values({ agent, tx_hash: randomTxHash(), amount: '1', type: 0, success: true, occurred_at: at, recorded_at: at })
    .execute();
}

/** The screenings of these addresses made now (each test runs at its own minute). */
const screeningsOf = (addresses: string[]) =>
  database.db
    .selectFrom('sanctions_screenings')
    .select(['address', 'sanctioned', 'matched_lists', 'snapshot_id', 'created_at'])
    .where('address', 'in', addresses)
    .where('created_at', '=', clock.now)
    .orderBy('id')
    .execute();

const verificationsOf = (address: string) =>
  database.db.selectFrom('verifications').selectAll().where('agent', '=', address).orderBy('id').execute();

describe('verify', () => {
  it('makes one read and one store for a known agent with an owner, and stores the screenings and the result', async () => {
    const agent = await insertAgent({ owner: ETH_LISTED, firstSeenDaysAgo: 3, score: 420 });
    await insertTx(agent, 1);
    await insertTx(agent, 2);
    await insertTx(agent, 40); // outside the 30-day activity window
    const { verify, executed } = verifier();

    const result = await verify(agent);

    expect(executed).toEqual(['RawNode', 'RawNode']);
    expect(result).toMatchObject({
      address: agent,
      score: 420,
      grade: 'CC',
      passed: 5,
      // No chain here: its two checks did not run, so six ran.
      total: 6,
      notRun: 2,
      status: 'PARTIALLY_VERIFIED',
      statusDetail: 'PARTIALLY_VERIFIED: 5 of the 6 checks that ran passed; not run: contractExists, ownerConsistency',
      verifiedAt: Math.floor(clock.now.getTime() / 1000),
      checks: {
        registration: true,
        contractExists: false,
        accountAge: true,
        ownerConsistency: false,
        activityLevel: true,
        ownershipStability: true,
        sanctionsScreening: false,
        minimumScore: true,
      },
    });
    expect(result.checkDetails.activityLevel).toBe('2 transaction(s) in the last 30 days');
    expect(result.checkDetails.sanctionsScreening).toBe('the owner is on the OFAC SDN list (ETH)');

    expect(await screeningsOf([agent, ETH_LISTED])).toEqual([
      { address: agent, sanctioned: false, matched_lists: [], snapshot_id: snapshotId, created_at: clock.now },
      { address: ETH_LISTED, sanctioned: true, matched_lists: ['ETH'], snapshot_id: snapshotId, created_at: clock.now },
    ]);
    const stored = await verificationsOf(agent);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      status: result.status,
      passed: result.passed,
      total: 6,
      score: 420,
      grade: 'CC',
      checks: result.checks,
      check_details: result.checkDetails,
      created_at: clock.now,
    });
  });

  it('an unknown address still gets one read and one store, with its screening alone', async () => {
    const clean = randomAddress();
    const first = verifier();
    expect(await first.verify(clean)).toMatchObject({ status: 'UNVERIFIED', passed: 2, score: 0, grade: 'D' });
    expect(first.executed).toEqual(['RawNode', 'RawNode']);
    expect(await screeningsOf([clean])).toEqual([
      { address: clean, sanctioned: false, matched_lists: [], snapshot_id: snapshotId, created_at: clock.now },
    ]);

    const second = verifier();
    const result = await second.verify(USDT_ONLY);
    expect(result).toMatchObject({ status: 'SUSPICIOUS', passed: 1, checks: { sanctionsScreening: false } });
    expect(result.checkDetails.sanctionsScreening).toBe('the address is on the OFAC SDN list (USDT)');
    expect(second.executed).toEqual(['RawNode', 'RawNode']);
    expect(await screeningsOf([USDT_ONLY])).toEqual([
      { address: USDT_ONLY, sanctioned: true, matched_lists: ['USDT'], snapshot_id: snapshotId, created_at: clock.now },
    ]);
    expect(await verificationsOf(USDT_ONLY)).toHaveLength(1);
  });

  it('an agent that is its own owner is screened twice, as the sanctions service would', async () => {
    const agent = await insertAgent({ owner: null, firstSeenDaysAgo: 0, score: 0 });
    await database.db.updateTable('agents').set({ owner: agent }).where('address', '=', agent).execute();
    await verifier().verify(agent);
    expect((await screeningsOf([agent])).map((r) => r.address)).toEqual([agent, agent]);
  });

  it('without an active snapshot the screening does not pass, and the screenings name no snapshot', async () => {
    const agent = await insertAgent({ owner: USDT_ONLY, firstSeenDaysAgo: 5, score: 100 });
    await database.db.updateTable('sanctions_snapshots').set({ is_active: false }).execute();
    try {
      const { verify, executed } = verifier();
      const result = await verify(agent);
      expect(executed).toHaveLength(2);
      // Could not screen is not clean: the check fails closed.
      expect(result.checks.sanctionsScreening).toBe(false);
      expect(result.sanctionsList).toBeNull();
      expect(await screeningsOf([agent, USDT_ONLY])).toEqual([
        expect.objectContaining({ address: agent, sanctioned: false, matched_lists: [], snapshot_id: null }),
        expect.objectContaining({ address: USDT_ONLY, sanctioned: false, matched_lists: [], snapshot_id: null }),
      ]);
    } finally {
      await database.db
        .updateTable('sanctions_snapshots')
        .set({ is_active: true })
        .where('id', '=', snapshotId)
        .execute();
    }
  });

  it('stores neither the screenings nor the verification when the write fails', async () => {
    const owner = randomAddress();
    const agent = await insertAgent({ owner, firstSeenDaysAgo: 3, score: 500 });
    await sql`CREATE FUNCTION refuse_verification() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused by test'; END $$`.execute(database.db);
    await sql`CREATE TRIGGER refuse_verification BEFORE INSERT ON verifications
      FOR EACH ROW EXECUTE FUNCTION refuse_verification()`.execute(database.db);
    try {
      await expect(verifier().verify(agent)).rejects.toThrow(/refused by test/);
    } finally {
      await sql`DROP TRIGGER refuse_verification ON verifications`.execute(database.db);
      await sql`DROP FUNCTION refuse_verification()`.execute(database.db);
    }
    expect(await screeningsOf([agent, owner])).toEqual([]);
    expect(await verificationsOf(agent)).toEqual([]);
  });

  it('verifies an address again in one statement while its facts are unchanged', async () => {
    const owner = randomAddress();
    const agent = await insertAgent({ owner, firstSeenDaysAgo: 3, score: 420 });
    await insertTx(agent, 1);
    const { verify, executed } = verifier();
    const first = await verify(agent);
    expect(executed).toEqual(['RawNode', 'RawNode']);

    clock.now = new Date(clock.now.getTime() + 1000);
    executed.length = 0;
    const again = await verify(agent);
    expect(executed).toEqual(['RawNode']);
    expect(again).toEqual({ ...first, verifiedAt: first.verifiedAt + 1 });
    const stored = await verificationsOf(agent);
    expect(stored).toHaveLength(2);
    expect(stored[1]).toMatchObject({
      status: again.status,
      passed: again.passed,
      checks: again.checks,
      check_details: again.checkDetails,
      created_at: clock.now,
    });
    expect(await screeningsOf([agent, owner])).toEqual([
      { address: agent, sanctioned: false, matched_lists: [], snapshot_id: snapshotId, created_at: clock.now },
      { address: owner, sanctioned: false, matched_lists: [], snapshot_id: snapshotId, created_at: clock.now },
    ]);
  });

  it('evaluates the current facts when they changed since the address was last verified, storing once', async () => {
    const agent = await insertAgent({ owner: null, firstSeenDaysAgo: 3, score: 420 });
    const { verify, executed } = verifier();
    const tick = () => {
      clock.now = new Date(clock.now.getTime() + 1000);
      executed.length = 0;
    };
    expect((await verify(agent)).checks.activityLevel).toBe(false);

    // A transaction recorded since.
    await insertTx(agent, 29.99);
    tick();
    const withTx = await verify(agent);
    expect(withTx.checks.activityLevel).toBe(true);
    expect(executed).toEqual(['RawNode', 'RawNode']);

    // An owner set since, one on the sanctions list.
    await database.db
      .updateTable('agents')
      .set({ owner: ETH_LISTED, owner_changed_at: clock.now })
      .where('address', '=', agent)
      .execute();
    tick();
    const owned = await verify(agent);
    expect(owned.checks).toMatchObject({ activityLevel: true, sanctionsScreening: false, ownershipStability: false });
    expect(executed).toEqual(['RawNode', 'RawNode']);
    expect(await screeningsOf([agent, ETH_LISTED])).toEqual([
      { address: agent, sanctioned: false, matched_lists: [], snapshot_id: snapshotId, created_at: clock.now },
      { address: ETH_LISTED, sanctioned: true, matched_lists: ['ETH'], snapshot_id: snapshotId, created_at: clock.now },
    ]);

    // Nothing changed: one statement again.
    tick();
    expect(await verify(agent)).toEqual({ ...owned, verifiedAt: owned.verifiedAt + 1 });
    expect(executed).toEqual(['RawNode']);

    // A score set since.
    await database.db.updateTable('agents').set({ score: 50 }).where('address', '=', agent).execute();
    tick();
    const lowered = await verify(agent);
    expect(lowered).toMatchObject({ score: 50, grade: 'D', checks: { minimumScore: false } });
    expect(executed).toEqual(['RawNode', 'RawNode']);

    // The transaction has left the 30-day window: the facts changed with the time alone.
    clock.now = new Date(clock.now.getTime() + DAY_MS / 50);
    executed.length = 0;
    expect((await verify(agent)).checks.activityLevel).toBe(false);
    expect(executed).toEqual(['RawNode', 'RawNode']);

    const stored = await verificationsOf(agent);
    expect(stored.map((v) => v.checks.activityLevel)).toEqual([false, true, true, true, true, false]);
    expect(stored.map((v) => v.score)).toEqual([420, 420, 420, 420, 50, 50]);
  });

  it('evaluates again when the facts change between its read and its store, and stores only the current', async () => {
    const agent = await insertAgent({ owner: null, firstSeenDaysAgo: 3, score: 420 });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const chain: Pick<ChainReader, 'hasCode' | 'owner'> = {
      hasCode: async () => {
        await answered;
        return { ok: true, value: true };
      },
      // The agent has no owner: owner() is never asked.
      owner: async () => ({ ok: false, reason: 'not asked', unreachable: false }),
    };
    const { verify, executed } = verifier(chain);
    const verifying = verify(agent);
    // The facts are read (no transaction yet); while the chain is still being asked, one is recorded.
    await expect.poll(() => executed.length).toBe(1);
    await insertTx(agent, 1);
    answer();
    const result = await verifying;
    expect(result.checks.activityLevel).toBe(true);
    // The read, the store that found the facts changed, the store of the current ones.
    expect(executed).toEqual(['RawNode', 'RawNode', 'RawNode']);
    expect((await verificationsOf(agent)).map((v) => v.checks.activityLevel)).toEqual([true]);
  });

  it('reads the chain: bytecode alongside the read, owner() for an agent with an owner', async () => {
    const owner = randomAddress();
    const agent = await insertAgent({ owner, firstSeenDaysAgo: 10, score: 800 });
    await insertTx(agent, 1);
    const calls: string[] = [];
    // The bytecode answers only once owner() has been asked: the two reads overlap.
    let ownerAsked = () => {};
    const asked = new Promise<void>((resolve) => {
      ownerAsked = resolve;
    });
    const chain: Pick<ChainReader, 'hasCode' | 'owner'> = {
      hasCode: async (address) => {
        calls.push(`hasCode ${address}`);
        await Promise.race([asked, new Promise((resolve) => setTimeout(resolve, 2000))]);
        calls.push('hasCode answered');
        return { ok: true, value: true };
      },
      owner: async (address) => {
        calls.push(`owner ${address}`);
        ownerAsked();
        return { ok: true, value: owner };
      },
    };
    const { verify, executed } = verifier(chain);
    const result = await verify(agent);
    expect(calls).toEqual([`hasCode ${agent}`, `owner ${agent}`, 'hasCode answered']);
    expect(executed).toEqual(['RawNode', 'RawNode']);
    expect(result).toMatchObject({ status: 'VERIFIED', passed: 8 });
    expect(result.checkDetails.ownerConsistency).toBe(`on-chain owner() is the registered owner ${owner}`);

    // No owner registered: owner() is not asked.
    calls.length = 0;
    const ownerless = await insertAgent({ owner: null, firstSeenDaysAgo: 10, score: 800 });
    expect((await verifier(chain).verify(ownerless)).checks.ownerConsistency).toBe(false);
    expect(calls).toEqual([`hasCode ${ownerless}`, 'hasCode answered']);
  });
});
