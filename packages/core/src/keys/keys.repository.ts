import type { DB, Kysely } from '@vouch/db';

type Executor = Kysely<DB>;

export interface ApiKeyRow {
  id: string;
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
  v: { id: string; name: string; keyHash: string; scopes: string[]; expiresAt: Date | null; now: Date },
): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      id: v.id,
      name: v.name,
      key_hash: v.keyHash,
      scopes: v.scopes,
      expires_at: v.expiresAt,
      created_at: v.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listKeys(db: Executor): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id').execute();
}

export function findKeyByHash(db: Executor, keyHash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
}

/** Revokes a key (a second revocation keeps the first time); undefined when the id is unknown. */
export async function revokeKey(db: Executor, id: string, now: Date): Promise<ApiKeyRow | undefined> {
  const updated = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return updated ?? db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function touchKey(db: Executor, id: string, now: Date): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
}
