import { type DB, type Kysely, runPrepared, sql } from '@vouch/db';
import { type Screening, screeningRows } from '../sanctions/sanctions.repository.ts';
import type { VerificationResult } from './verification.model.ts';

type Executor = Kysely<DB>;

/** Everything the checks read from the database; see `vouch_verification_facts` (migration 20261121030000). */
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
  /** The lists the address and the agent's owner are on in that snapshot (null when not listed). */
  address_lists: string[] | null;
  owner_lists: string[] | null;
}

/**
 * One call of a PL/pgSQL function, which keeps the plan of its five-table query for the
 * session (planning it on every call cost more than running it), as a prepared statement.
 * Always exactly one row.
 */
export async function readVerificationFacts(db: Executor, address: string, since: Date): Promise<VerificationFactsRow> {
  const query = sql<VerificationFactsRow>`SELECT * FROM vouch_verification_facts(${address}, ${since})`;
  const { rows } = await runPrepared(db, query.compile(db));
  const row = rows[0];
  if (!row) throw new Error('vouch_verification_facts returned no row');
  return row;
}

/**
 * Stores the screenings a verification made and the verification itself in one prepared
 * statement (one commit): both are kept or neither is.
 */
export async function insertVerification(
  db: Executor,
  v: { screenings: Screening[]; snapshotId: string | null; verification: VerificationResult; now: Date },
): Promise<void> {
  const insert = db
    .with('s', (qc) => qc.insertInto('sanctions_screenings').values(screeningRows(v.screenings, v.snapshotId, v.now)))
    .insertInto('verifications')
    .values({
      agent: v.verification.address,
      status: v.verification.status,
      passed: v.verification.passed,
      total: v.verification.total,
      score: v.verification.score,
      grade: v.verification.grade,
      checks: JSON.stringify(v.verification.checks),
      check_details: JSON.stringify(v.verification.checkDetails),
      created_at: v.now,
    });
  await runPrepared(db, insert.compile());
}
