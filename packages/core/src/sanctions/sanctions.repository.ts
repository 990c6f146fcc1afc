import { type DB, type Kysely, type RawBuilder, type Selectable, sql } from '@vouch/db';
import { agentEventCtes } from '../events/events.repository.ts';
import type { ScreeningRefusal } from './sanctions.model.ts';

type Executor = Kysely<DB>;

/** The active snapshot (one at a time, see `activate`), for a query to select from. */
export function activeSnapshotQuery(db: Executor) {
  return db.selectFrom('sanctions_snapshots').where('is_active', '=', true);
}

export function activeSnapshot(db: Executor) {
  return activeSnapshotQuery(db).selectAll().executeTakeFirst();
}

/** Whether any snapshot was ever stored, active or not. */
export async function anySnapshot(db: Executor): Promise<boolean> {
  return (await db.selectFrom('sanctions_snapshots').select('id').limit(1).executeTakeFirst()) !== undefined;
}

type SnapshotRow = Selectable<DB['sanctions_snapshots']>;

/**
 * The active snapshot and the entries of the given addresses in it, read in one statement, so
 * both are of one moment (an import committing meanwhile is seen whole or not at all); the
 * addresses travel as one array, however many (every registered agent, after an import). No
 * active snapshot: none, and no matches.
 */
export async function activeMatches(
  db: Executor,
  addresses: string[],
): Promise<{ snapshot: SnapshotRow | undefined; matches: Map<string, string[]> }> {
  const { rows } = await sql<SnapshotRow & { matched_address: string | null; matched_lists: string[] | null }>`
    SELECT s.*, e.address AS matched_address, e.lists AS matched_lists
    FROM sanctions_snapshots s
    LEFT JOIN sanctions_entries e ON e.snapshot_id = s.id AND e.address = ANY(${addresses}::text[])
    WHERE s.is_active`.execute(db);
  const first = rows[0];
  if (!first) return { snapshot: undefined, matches: new Map() };
  const { matched_address: _address, matched_lists: _lists, ...snapshot } = first;
  const matches = new Map<string, string[]>();
  for (const row of rows) if (row.matched_address !== null) matches.set(row.matched_address, row.matched_lists ?? []);
  return { snapshot, matches };
}

export async function addressesOf(db: Executor, snapshotId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('sanctions_entries')
    .select('address')
    .where('snapshot_id', '=', snapshotId)
    .execute();
  return rows.map((r) => r.address);
}

/** Every address of a snapshot and the lists it is on. */
export async function entriesOf(db: Executor, snapshotId: string): Promise<Map<string, string[]>> {
  const rows = await db
    .selectFrom('sanctions_entries')
    .select(['address', 'lists'])
    .where('snapshot_id', '=', snapshotId)
    .execute();
  return new Map(rows.map((r) => [r.address, r.lists]));
}

/** Stores a snapshot, inactive until activated. */
export async function insertSnapshot(
  db: Executor,
  v: {
    name: string;
    snapshotDate: string;
    entries: Map<string, string[]>;
    contentHash: string;
    /** The snapshot active until this one is: what its re-scoring compares with. */
    previousId: string | null;
  },
): Promise<string> {
  const snapshot = await db
    .insertInto('sanctions_snapshots')
    .values({
      name: v.name,
      snapshot_date: v.snapshotDate,
      entries: v.entries.size,
      content_hash: v.contentHash,
      is_active: false,
      previous_id: v.previousId,
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

/** The active snapshot, if the re-scoring of its import is still owed (its importer stopped first). */
export function owedRescore(db: Executor) {
  return activeSnapshotQuery(db).select(['id', 'previous_id']).where('rescored_at', 'is', null).executeTakeFirst();
}

/**
 * The snapshot `id` and, newest first, the snapshots before it back to the last one whose
 * re-scoring was done (included) or to the first one: every step whose listings and delistings
 * are still to be re-scored when `id`'s are.
 */
export async function unrescoredChain(db: Executor, id: string): Promise<Array<{ id: string; rescored: boolean }>> {
  const { rows } = await sql<{ id: string; rescored: boolean }>`
    WITH RECURSIVE chain AS (
      SELECT id, previous_id, rescored_at, 0 AS depth FROM sanctions_snapshots WHERE id = ${id}
      UNION ALL
      SELECT s.id, s.previous_id, s.rescored_at, c.depth + 1
      FROM sanctions_snapshots s JOIN chain c ON s.id = c.previous_id
      WHERE c.rescored_at IS NULL OR c.depth = 0
    )
    SELECT id::text AS id, rescored_at IS NOT NULL AS rescored FROM chain ORDER BY depth`.execute(db);
  return rows;
}

/** The re-scoring of this snapshot's import is done. */
export async function markRescored(db: Executor, snapshotId: string, at: Date): Promise<void> {
  await db.updateTable('sanctions_snapshots').set({ rescored_at: at }).where('id', '=', snapshotId).execute();
}

/** Makes one snapshot the active one (only one is active at a time). */
export async function activate(db: Executor, snapshotId: string): Promise<void> {
  await db.updateTable('sanctions_snapshots').set({ is_active: false }).where('is_active', '=', true).execute();
  await db.updateTable('sanctions_snapshots').set({ is_active: true }).where('id', '=', snapshotId).execute();
  // Cached budget rows carry their agent's screening, and decisions screen against a cached copy
  // of the active list: the table's trigger (vouch_notify_sanctions) has every replica drop both at commit.
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

/** The known agents (registered or observed) among these addresses. */
export async function knownAmong(db: Executor, addresses: string[]): Promise<string[]> {
  if (addresses.length === 0) return [];
  const { rows } = await sql<{ address: string }>`
    SELECT address FROM agents WHERE address = ANY(${addresses}::text[]) ORDER BY address`.execute(db);
  return rows.map((r) => r.address);
}

/** An address for a SQL condition: a value (a parameter) or an expression (a column, say). */
type AddressSql = string | null | RawBuilder<unknown>;

/** SQL condition: the address is on the active list. */
const onActiveList = (address: AddressSql) => sql<boolean>`EXISTS (
  SELECT 1 FROM sanctions_entries se JOIN sanctions_snapshots ss ON ss.id = se.snapshot_id AND ss.is_active
  WHERE se.address = ${address})`;

/** SQL condition: the address in `column` is on the active list. */
export const sanctionedSql = (column: string) => onActiveList(sql.ref(column));

/** SQL condition: the agent or its owner is on the active list. */
export const agentOrOwnerSanctioned = (agent: AddressSql) => sql<boolean>`EXISTS (
  SELECT 1 FROM agents a
  JOIN sanctions_snapshots ss ON ss.is_active
  JOIN sanctions_entries se ON se.snapshot_id = ss.id AND se.address IN (a.address, a.owner)
  WHERE a.address = ${agent})`;

/**
 * SQL: why the sanctions screen refuses a payment of `agent` to `counterparty` (null: none
 * named), or NULL when it passes. The first that holds, in this order: no list is active
 * (SANCTIONS_LIST_UNAVAILABLE: nobody can be screened, so nobody passes), the agent or its owner
 * is listed (SANCTIONED), the counterparty is (COUNTERPARTY_SANCTIONED). Spends, holds and
 * captures decide with it in their own statement; the budget check with the agent alone.
 */
export const screeningRefusalSql = (agent: AddressSql, counterparty: AddressSql) => sql<ScreeningRefusal | null>`(CASE
  WHEN NOT EXISTS (SELECT 1 FROM sanctions_snapshots WHERE is_active) THEN 'SANCTIONS_LIST_UNAVAILABLE'
  WHEN ${agentOrOwnerSanctioned(agent)} THEN 'SANCTIONED'
  WHEN ${onActiveList(counterparty)} THEN 'COUNTERPARTY_SANCTIONED'
END)`;

/** Why the sanctions screen refuses a payment of `agent` to `counterparty` now (null: it passes). */
export async function screeningRefusal(
  db: Executor,
  agent: string,
  counterparty: string | null,
): Promise<ScreeningRefusal | null> {
  const result = await sql<{ refusal: ScreeningRefusal | null }>`
    SELECT ${screeningRefusalSql(agent, counterparty)} AS refusal`.execute(db);
  return result.rows[0]?.refusal ?? null;
}

/** Serializes imports for the transaction (replicas starting together load the bundled lists once). */
export async function lockImports(trx: Executor): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(740011)`.execute(trx);
}

/**
 * `sanctions.hit` for every known agent that a new snapshot lists, or whose owner it lists, where
 * the previous snapshot (null: none) did not: one event per agent naming each new match, to every
 * organization that hears of the agent. Run in the transaction that activates the snapshot.
 */
export async function announceHits(
  db: Executor,
  v: { snapshotId: string; previousId: string | null; at: Date },
): Promise<number> {
  const events = agentEventCtes(
    v.at,
    'hit_events',
    {
      type: sql`'sanctions.hit'`,
      agent: sql`hit.agent`,
      data: sql`jsonb_build_object('matches', hit.matches, 'owner', hit.owner,
        'snapshot', jsonb_build_object('id', s.id::text, 'name', s.name, 'snapshotDate', s.snapshot_date))`,
    },
    sql`hit JOIN sanctions_snapshots s ON s.id = ${v.snapshotId}::bigint`,
  );
  const result = await sql<{ n: number }>`
    WITH added AS (
      SELECT ne.address, ne.lists FROM sanctions_entries ne
      WHERE ne.snapshot_id = ${v.snapshotId}::bigint AND NOT EXISTS (
        SELECT 1 FROM sanctions_entries pe WHERE pe.snapshot_id = ${v.previousId}::bigint AND pe.address = ne.address)
    ), matched AS (
      SELECT a.address AS agent, a.owner, 'agent' AS role, ad.address, ad.lists FROM agents a JOIN added ad ON ad.address = a.address
      UNION ALL
      SELECT a.address, a.owner, 'owner', ad.address, ad.lists FROM agents a JOIN added ad ON ad.address = a.owner
    ), hit AS (
      SELECT agent, owner,
        jsonb_agg(jsonb_build_object('role', role, 'address', address, 'lists', to_jsonb(lists)) ORDER BY role) AS matches
      FROM matched GROUP BY agent, owner
    ), ${events}
    SELECT count(*)::int AS n FROM hit_events`.execute(db);
  return result.rows[0]?.n ?? 0;
}
