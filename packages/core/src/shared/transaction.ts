import type { DB, Kysely } from '@vouch/db';

/**
 * Runs `work` in `executor` when it is a transaction already (an idempotent request's, whose
 * commit also stores the answer), else in a transaction of its own on `db`.
 */
export function inTransaction<T>(
  db: Kysely<DB>,
  executor: Kysely<DB>,
  work: (trx: Kysely<DB>) => Promise<T>,
): Promise<T> {
  return executor.isTransaction ? work(executor) : db.transaction().execute(work);
}
