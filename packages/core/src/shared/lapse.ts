import { type RawBuilder, sql } from '@vouch/db';

/**
 * Holds and approvals end at their `expiresAt`; the sweep marks them `expired` a little later.
 * What they read as at `now`: a status that lapses (`lapsing`), past its time, is `expired`
 * already, so that a read says what a capture, an approval or a redemption would be told.
 */
export function statusAt<S extends string>(
  row: { status: S; expires_at: Date },
  lapsing: readonly S[],
  now: Date,
): S | 'expired' {
  return lapsing.includes(row.status) && row.expires_at.getTime() <= now.getTime() ? 'expired' : row.status;
}

/** The SQL condition of a list's `status` filter on a table with `status` and `expires_at`, as `statusAt` reads them. */
export function statusAtSql(status: string, lapsing: readonly string[], now: Date): RawBuilder<boolean> {
  const lapses = sql`status IN (${sql.join(lapsing)})`;
  if (status === 'expired') return sql<boolean>`(status = 'expired' OR (${lapses} AND expires_at <= ${now}))`;
  if (lapsing.includes(status)) return sql<boolean>`(status = ${status} AND expires_at > ${now})`;
  return sql<boolean>`status = ${status}`;
}
