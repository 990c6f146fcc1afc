import { type DB, type IdempotencyRow, type Kysely, sql } from '@vouch/db';

type Executor = Kysely<DB>;

/** Takes the key's lock for the transaction if nobody holds it; false when another request does. */
export async function tryLockKey(trx: Executor, organizationId: string, scope: string, key: string): Promise<boolean> {
  const lock = await sql<{ locked: boolean }>`
    SELECT pg_try_advisory_xact_lock(hashtextextended(${`${organizationId}\n${scope}\n${key}`}, 0)) AS locked`.execute(
    trx,
  );
  return lock.rows[0]?.locked === true;
}

/** Takes the key's lock for the transaction, waiting while another transaction holds it (a job: its answer is stored under the key). */
export async function lockKey(trx: Executor, organizationId: string, scope: string, key: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${organizationId}\n${scope}\n${key}`}, 0))`.execute(trx);
}

/** The stored answer of a key that has not expired. */
export function findLiveKey(
  db: Executor,
  organizationId: string,
  scope: string,
  key: string,
  now: Date,
): Promise<IdempotencyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Stores (or replaces an expired) key with its request hash and answer. */
export async function storeKey(
  db: Executor,
  v: {
    organizationId: string;
    scope: string;
    key: string;
    requestHash: string;
    statusCode: number;
    response: string;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  const values = {
    request_hash: v.requestHash,
    status_code: v.statusCode,
    response: v.response,
    created_at: v.now,
    expires_at: v.expiresAt,
  };
  await db
    .insertInto('idempotency_keys')
    .values({ organization_id: v.organizationId, scope: v.scope, key: v.key, ...values })
    .onConflict((oc) => oc.columns(['organization_id', 'scope', 'key']).doUpdateSet(values))
    .execute();
}

/** Drops a key's claim (status 0) made for this request, when its job could not be queued or failed for good. */
export async function dropClaim(
  db: Executor,
  v: { organizationId: string; scope: string; key: string; requestHash: string; claim: string },
): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('organization_id', '=', v.organizationId)
    .where('scope', '=', v.scope)
    .where('key', '=', v.key)
    .where('request_hash', '=', v.requestHash)
    .where('status_code', '=', 0)
    // Only the claim made for this job: a later claim of the same request (its own job) stays.
    .where(sql<string>`response->>'job'`, '=', v.claim)
    .execute();
}

/** Drops keys past their retention; returns how many. */
export async function deleteExpiredKeys(db: Executor, now: Date): Promise<number> {
  const deleted = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(deleted.numDeletedRows);
}
