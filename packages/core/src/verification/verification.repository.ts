import { type DB, type Kysely, runPrepared, sql } from '@vouch/db';
import { agentEventCtes } from '../events/events.repository.ts';
import { type Screening, screeningRows } from '../sanctions/sanctions.repository.ts';
import type { VerificationResult } from './verification.model.ts';

type Executor = Kysely<DB>;

/** Everything the checks read from the database; see `vouch_verification_facts` (packages/db/src/functions.ts, v2). */
export interface VerificationFactsRow {
  known: boolean;
  /** The agent's columns are null when it is unknown. */
  is_registered: boolean | null;
  owner: string | null;
  owner_changed_at: Date | null;
  first_seen_at: Date | null;
  score: number | null;
  /** Its transactions since `since`. */
  recent_transactions: number | null;
  /** The active sanctions snapshot (null columns when there is none). */
  snapshot_id: string | null;
  snapshot_name: string | null;
  snapshot_date: string | null;
  snapshot_entries: number | null;
  snapshot_hash: string | null;
  /** The lists the address and the agent's owner are on in that snapshot (null when not listed). */
  address_lists: string[] | null;
  owner_lists: string[] | null;
}

/** The facts and a fingerprint of them that PostgreSQL computes: equal fingerprints, equal facts. */
export interface FingerprintedFacts extends VerificationFactsRow {
  fingerprint: string;
}

/** The facts of `vouch_verification_facts` and their fingerprint, as a query to select from. */
const factsOf = (address: string, since: Date) =>
  sql`SELECT f.*, md5(f::text) AS fingerprint FROM vouch_verification_facts(${address}, ${since}) AS f`;

/**
 * One call of a PL/pgSQL function, which keeps the plan of its five-table query for the
 * session (planning it on every call cost more than running it), as a prepared statement.
 * Always exactly one row.
 */
export async function readVerificationFacts(db: Executor, address: string, since: Date): Promise<FingerprintedFacts> {
  const { rows } = await runPrepared(db, sql<FingerprintedFacts>`${factsOf(address, since)}`.compile(db));
  const row = rows[0];
  if (!row) throw new Error('vouch_verification_facts returned no row');
  return row;
}

export interface StoreVerification {
  /** The facts are read again as the statement runs… */
  since: Date;
  /**
   * …and the verification is stored only if they still have this fingerprint (the facts
   * it was evaluated from); null stores it whatever the facts are now.
   */
  expected: string | null;
  screenings: Screening[];
  snapshotId: string | null;
  verification: VerificationResult;
  now: Date;
  /** Announce a status that differs from the address's previous verification (verification.completed); null: never. */
  events?: Date | null | undefined;
}

/**
 * Stores the screenings a verification made and the verification itself in one prepared
 * statement (one commit): both are kept or neither is. With an expected fingerprint the
 * same statement reads the facts again and stores only if they still have it; when they
 * do not, nothing is stored and the current facts come back for the caller to evaluate.
 * Without one, the facts are not read (the function is behind a one-time filter).
 * Every stored verification moves the address's head (`verification_heads`) to its status.
 * With `events`, one whose status differs from the head's before it (or that is the first) is
 * announced in the same statement to every organization that hears of the agent (none for an
 * address nobody registered or budgets for).
 */
export async function storeVerification(
  db: Executor,
  v: StoreVerification,
): Promise<{ stored: true; announced: boolean } | { stored: false; facts: FingerprintedFacts }> {
  const r = v.verification;
  const expected = sql`${v.expected}::text`;
  const screenings = JSON.stringify(screeningRows(v.screenings, v.snapshotId, v.now));
  // The previous status is the head's, replaced by this statement's upsert: an upsert waits for
  // a verification of the address still being stored and reads the status it committed, where
  // the statement's snapshot would not see it (two at once would both announce one change).
  const announce = agentEventCtes(
    v.events ?? null,
    'verification_events',
    {
      type: sql`'verification.completed'`,
      agent: sql`${r.address}::text`,
      data: sql`jsonb_build_object('status', ${r.status}::text, 'previousStatus', head.previous_status, 'passed', ${r.passed}::int,
        'total', ${r.total}::int, 'score', ${r.score}::int, 'grade', ${r.grade}::text, 'verifiedAt', ${r.verifiedAt}::bigint)`,
      where: sql`head.previous_status IS DISTINCT FROM ${r.status}::text`,
    },
    sql`head`,
  );
  const statement = sql<{ stored: boolean; announced: boolean } & FingerprintedFacts>`
    WITH f AS (SELECT * FROM (${factsOf(r.address, v.since)}) AS current WHERE ${expected} IS NOT NULL),
    ok AS (SELECT 1 WHERE ${expected} IS NULL UNION ALL SELECT 1 FROM f WHERE f.fingerprint = ${expected}),
    s AS (
      INSERT INTO sanctions_screenings (address, sanctioned, matched_lists, snapshot_id, created_at)
      SELECT x.address, x.sanctioned, ARRAY(SELECT jsonb_array_elements_text(x.matched_lists)), x.snapshot_id, x.created_at
      FROM ok, jsonb_to_recordset(${screenings}::jsonb)
        AS x(address text, sanctioned boolean, matched_lists jsonb, snapshot_id bigint, created_at timestamptz)
    ),
    v AS (
      INSERT INTO verifications (agent, status, passed, total, score, grade, checks, check_details, check_states,
        sanctions_list, created_at)
      SELECT ${r.address}::text, ${r.status}::text, ${r.passed}::int, ${r.total}::int, ${r.score}::int,
        ${r.grade}::text, ${JSON.stringify(r.checks)}::jsonb, ${JSON.stringify(r.checkDetails)}::jsonb,
        ${JSON.stringify(r.checkStates)}::jsonb, ${JSON.stringify(r.sanctionsList)}::jsonb, ${v.now}::timestamptz
      FROM ok
    ),
    head AS (
      INSERT INTO verification_heads AS h (agent, status, previous_status, updated_at)
      SELECT ${r.address}::text, ${r.status}::text, NULL, ${v.now}::timestamptz FROM ok
      ON CONFLICT (agent) DO UPDATE
        SET previous_status = h.status, status = EXCLUDED.status, updated_at = EXCLUDED.updated_at
      RETURNING previous_status
    ),
    ${announce}
    SELECT EXISTS (SELECT 1 FROM ok) AS stored, EXISTS (SELECT 1 FROM verification_events) AS announced, f.*
    FROM (SELECT 1) AS one LEFT JOIN f ON true`;
  const { rows } = await runPrepared(db, statement.compile(db));
  const row = rows[0];
  if (!row) throw new Error('the verification statement returned no row');
  const { stored, announced, ...facts } = row;
  if (stored) return { stored: true, announced };
  return { stored: false, facts };
}

/** Stored verifications of an address, newest first. */
export function listVerifications(db: Executor, address: string, limit: number) {
  return db
    .selectFrom('verifications')
    .selectAll()
    .where('agent', '=', address)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The status and time of the address's latest verification: the first of `listVerifications`. */
export function latestVerification(db: Executor, address: string) {
  return db
    .selectFrom('verifications')
    .select(['status', 'created_at'])
    .where('agent', '=', address)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}
