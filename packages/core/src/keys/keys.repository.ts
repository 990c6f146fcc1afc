import type { DB, Kysely } from '@vouch/db';

type Executor = Kysely<DB>;

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
}

export function insertKey(
  db: Executor,
  v: {
    id: string;
    organizationId: string;
    name: string;
    keyHash: string;
    scopes: string[];
    expiresAt: Date | null;
    now: Date;
  },
): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      name: v.name,
      key_hash: v.keyHash,
      scopes: v.scopes,
      expires_at: v.expiresAt,
      created_at: v.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** An organization's keys (every key when `organizationId` is null), newest first. */
export function listKeys(db: Executor, organizationId: string | null): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').selectAll();
  if (organizationId !== null) query = query.where('organization_id', '=', organizationId);
  return query.orderBy('created_at', 'desc').orderBy('id').execute();
}

export function findKeyByHash(db: Executor, keyHash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
}

/**
 * Revokes a key of the organization (any organization's when `organizationId` is null); a second
 * revocation keeps the first time. `revoked` says whether this call revoked it; undefined when
 * the organization has no such key.
 */
export async function revokeKey(
  db: Executor,
  id: string,
  organizationId: string | null,
  now: Date,
): Promise<{ row: ApiKeyRow; revoked: boolean } | undefined> {
  let update = db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null);
  if (organizationId !== null) update = update.where('organization_id', '=', organizationId);
  const updated = await update.returningAll().executeTakeFirst();
  if (updated) return { row: updated, revoked: true };
  let select = db.selectFrom('api_keys').selectAll().where('id', '=', id);
  if (organizationId !== null) select = select.where('organization_id', '=', organizationId);
  const row = await select.executeTakeFirst();
  return row ? { row, revoked: false } : undefined;
}

/**
 * The keys' rows, locked until the transaction ends, in id order (two transactions locking the
 * same two keys wait for each other instead of each holding one): a revocation of one of them
 * waits for the transaction, or the transaction (coming after one in flight) reads it revoked.
 */
export function lockKeys(db: Executor, ids: string[]): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('id', 'in', ids).orderBy('id').forNoKeyUpdate().execute();
}

export async function touchKey(db: Executor, id: string, now: Date): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
}
