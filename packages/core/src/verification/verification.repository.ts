import { type DB, type Kysely, sql } from '@vouch/db';
import { activeSnapshotQuery, type Screening, screeningRows } from '../sanctions/sanctions.repository.ts';
import type { VerificationResult } from './verification.model.ts';

type Executor = Kysely<DB>;

/**
 * Everything the checks read from the database, in one statement: the agent (its columns
 * are null when it is unknown), its transactions since `since`, the active sanctions
 * snapshot (null columns when there is none) and the lists the address and the agent's
 * owner are on in that snapshot (null when not listed). Always exactly one row.
 */
export function readVerificationFacts(db: Executor, address: string, since: Date) {
  return db
    .selectFrom(sql<{ one: 1 }>`(SELECT 1 AS one)`.as('one'))
    .leftJoin('agents as a', (join) => join.on('a.address', '=', address))
    .leftJoin(activeSnapshotQuery(db).select(['id', 'name', 'snapshot_date', 'entries']).limit(1).as('ss'), (join) =>
      join.onTrue(),
    )
    .select((eb) => [
      eb('a.address', 'is not', null).$castTo<boolean>().as('known'),
      'a.is_registered',
      'a.owner',
      'a.owner_changed_at',
      'a.first_seen_at',
      'a.score',
      eb
        .selectFrom('transactions as t')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('t.agent', '=', address)
        .where('t.occurred_at', '>=', since)
        .as('recent_transactions'),
      'ss.id as snapshot_id',
      'ss.name as snapshot_name',
      'ss.snapshot_date',
      'ss.entries as snapshot_entries',
      eb
        .selectFrom('sanctions_entries as e')
        .select('e.lists')
        .whereRef('e.snapshot_id', '=', 'ss.id')
        .where('e.address', '=', address)
        .as('address_lists'),
      eb
        .selectFrom('sanctions_entries as e')
        .select('e.lists')
        .whereRef('e.snapshot_id', '=', 'ss.id')
        .whereRef('e.address', '=', 'a.owner')
        .as('owner_lists'),
    ])
    .executeTakeFirstOrThrow();
}

export type VerificationFactsRow = Awaited<ReturnType<typeof readVerificationFacts>>;

/**
 * Stores the screenings a verification made and the verification itself in one statement
 * (one commit): both are kept or neither is.
 */
export async function insertVerification(
  db: Executor,
  v: { screenings: Screening[]; snapshotId: string | null; verification: VerificationResult; now: Date },
): Promise<void> {
  await db
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
    })
    .execute();
}
