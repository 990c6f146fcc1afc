import { type DB, type Kysely, sql } from '@vouch/db';

type Executor = Kysely<DB>;

/** The active snapshot (one at a time, see `activate`), for a query to select from. */
export function activeSnapshotQuery(db: Executor) {
  return db.selectFrom('sanctions_snapshots').where('is_active', '=', true);
}

export function activeSnapshot(db: Executor) {
  return activeSnapshotQuery(db).selectAll().executeTakeFirst();
}

/** Matches of the given addresses in the active snapshot. */
export async function matches(db: Executor, addresses: string[]): Promise<Map<string, string[]>> {
  if (addresses.length === 0) return new Map();
  const rows = await db
    .selectFrom('sanctions_entries as e')
    .innerJoin('sanctions_snapshots as s', 's.id', 'e.snapshot_id')
    .select(['e.address', 'e.lists'])
    .where('s.is_active', '=', true)
    .where('e.address', 'in', addresses)
    .execute();
  return new Map(rows.map((r) => [r.address, r.lists]));
}

export async function addressesOf(db: Executor, snapshotId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('sanctions_entries')
    .select('address')
    .where('snapshot_id', '=', snapshotId)
    .execute();
  return rows.map((r) => r.address);
}

/** Stores a snapshot, inactive until activated. */
export async function insertSnapshot(
  db: Executor,
  v: { name: string; snapshotDate: string; entries: Map<string, string[]>; contentHash: string },
): Promise<string> {
  const snapshot = await db
    .insertInto('sanctions_snapshots')
    .values({
      name: v.name,
      snapshot_date: v.snapshotDate,
      entries: v.entries.size,
      content_hash: v.contentHash,
      is_active: false,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const rows = [...v.entries].map(([address, lists]) => ({ snapshot_id: snapshot.id, address, lists }));
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('sanctions_entries')
      .values(rows.slice(i, i + 1000))
      .execute();
  }
  return snapshot.id;
}

/** Makes one snapshot the active one (only one is active at a time). */
export async function activate(db: Executor, snapshotId: string): Promise<void> {
  await db.updateTable('sanctions_snapshots').set({ is_active: false }).where('is_active', '=', true).execute();
  await db.updateTable('sanctions_snapshots').set({ is_active: true }).where('id', '=', snapshotId).execute();
  // Cached budget rows carry whether their agent is sanctioned: every replica drops them at commit.
  await sql`SELECT pg_notify('vouch_cache', 'budgets:*')`.execute(db);
}

export interface Screening {
  address: string;
  sanctioned: boolean;
  lists: string[];
}

/** The `sanctions_screenings` rows that keep these screenings. */
export function screeningRows(rows: Screening[], snapshotId: string | null, now: Date) {
  return rows.map((r) => ({
    address: r.address,
    sanctioned: r.sanctioned,
    matched_lists: r.lists,
    snapshot_id: snapshotId,
    created_at: now,
  }));
}

export async function recordScreenings(
  db: Executor,
  rows: Screening[],
  snapshotId: string | null,
  now: Date,
): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('sanctions_screenings')
      .values(screeningRows(rows.slice(i, i + 1000), snapshotId, now))
      .execute();
  }
}

export function latestScreening(db: Executor, address: string) {
  return db
    .selectFrom('sanctions_screenings')
    .select(['sanctioned', 'created_at'])
    .where('address', '=', address)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function registeredAgents(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('agents').select('address').where('is_registered', '=', true).execute();
  return rows.map((r) => r.address);
}

/** SQL condition: the address in `column` is on the active list. */
export const sanctionedSql = (column: string) => sql<boolean>`EXISTS (
  SELECT 1 FROM sanctions_entries se JOIN sanctions_snapshots ss ON ss.id = se.snapshot_id AND ss.is_active
  WHERE se.address = ${sql.ref(column)})`;

/** Serializes imports for the transaction (replicas starting together load the bundled lists once). */
export async function lockImports(trx: Executor): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(740011)`.execute(trx);
}

/**
 * What a decision screens, in one statement: the active list (or nulls without one), and whether
 * the agent, its owner (as registered) and the counterparty are on it.
 */
export async function decisionScreening(db: Executor, agent: string, counterparty: string | null) {
  const result = await sql<{
    name: string | null;
    snapshot_date: string | null;
    entries: number | null;
    content_hash: string | null;
    agent_listed: boolean;
    owner_listed: boolean;
    counterparty_listed: boolean;
  }>`
    SELECT ss.name, ss.snapshot_date, ss.entries, ss.content_hash,
      EXISTS (SELECT 1 FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = ${agent}) AS agent_listed,
      EXISTS (SELECT 1 FROM sanctions_entries e JOIN agents a ON a.address = ${agent} AND e.address = a.owner
        WHERE e.snapshot_id = ss.id) AS owner_listed,
      EXISTS (SELECT 1 FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = ${counterparty}) AS counterparty_listed
    FROM (SELECT 1) AS one LEFT JOIN sanctions_snapshots ss ON ss.is_active`.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error('the screening returned no row');
  return row;
}
