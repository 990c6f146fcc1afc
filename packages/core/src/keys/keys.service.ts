import type { DB, Kysely } from '@vouch/db';
import type { ApiKey, ApiKeyScope, CreateApiKeyInput, CreatedApiKey } from '@vouch/schemas';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { DomainError, ValidationError } from '../shared/errors.ts';
import { generateSecret, hashSecret, keyStatus, looksLikeSecret } from './keys.model.ts';
import * as repo from './keys.repository.ts';

export interface KeysDeps {
  db: Kysely<DB>;
  clock: Clock;
  /** How long a looked-up key is trusted without asking the database again (other replicas see a revocation this late). */
  cacheMs?: number;
  /** `last_used_at` is written at most this often per key. */
  touchEveryMs?: number;
}

/** Who a valid key belongs to. */
export interface KeyPrincipal {
  id: string;
  name: string;
  scopes: ApiKeyScope[];
}

export type AuthenticateResult =
  | { ok: true; key: KeyPrincipal }
  | { ok: false; reason: 'unknown' | 'expired' | 'revoked' };

const CACHE_LIMIT = 10_000;

export class ApiKeyNotFoundError extends DomainError {
  constructor(id: string) {
    super('NOT_FOUND', `no API key ${id}`);
  }
}

function toApiKey(row: repo.ApiKeyRow, now: Date): ApiKey {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes as ApiKeyScope[],
    status: keyStatus(row, now),
    expiresAt: row.expires_at ? toUnixSeconds(row.expires_at) : null,
    createdAt: toUnixSeconds(row.created_at),
    lastUsedAt: row.last_used_at ? toUnixSeconds(row.last_used_at) : null,
    revokedAt: row.revoked_at ? toUnixSeconds(row.revoked_at) : null,
  };
}

export function createKeysService({ db, clock, cacheMs = 5000, touchEveryMs = 60_000 }: KeysDeps) {
  // Hash → row (or null for an unknown hash) and when it was read.
  const cache = new Map<string, { row: repo.ApiKeyRow | null; at: number }>();
  const touched = new Map<string, number>();

  async function lookup(hash: string): Promise<repo.ApiKeyRow | null> {
    const hit = cache.get(hash);
    if (hit && Date.now() - hit.at < cacheMs) return hit.row;
    const row = (await repo.findKeyByHash(db, hash)) ?? null;
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(hash, { row, at: Date.now() });
    return row;
  }

  function touch(id: string, now: Date) {
    const last = touched.get(id);
    if (last !== undefined && now.getTime() - last < touchEveryMs) return;
    if (touched.size >= CACHE_LIMIT) touched.clear();
    touched.set(id, now.getTime());
    // Bookkeeping only: a failed write must not fail the request it rides on.
    repo.touchKey(db, id, now).catch(() => {});
  }

  return {
    async create(input: CreateApiKeyInput): Promise<CreatedApiKey> {
      const now = clock();
      if (input.expiresAt !== undefined && input.expiresAt <= toUnixSeconds(now)) {
        throw new ValidationError([{ path: 'body.expiresAt', message: 'must be in the future' }]);
      }
      const { id, secret } = generateSecret();
      // Canonical order, so a listing reads the same whatever order the caller sent.
      const scopes = (['read', 'write', 'admin'] as const).filter((s) => input.scopes.includes(s));
      const row = await repo.insertKey(db, {
        id,
        name: input.name,
        keyHash: hashSecret(secret),
        scopes,
        expiresAt: input.expiresAt !== undefined ? new Date(input.expiresAt * 1000) : null,
        now,
      });
      const created = toApiKey(row, now);
      return {
        id: created.id,
        name: created.name,
        scopes: created.scopes,
        expiresAt: created.expiresAt,
        createdAt: created.createdAt,
        key: secret,
      };
    },

    async list(): Promise<{ keys: ApiKey[] }> {
      const now = clock();
      return { keys: (await repo.listKeys(db)).map((row) => toApiKey(row, now)) };
    },

    async revoke(id: string): Promise<ApiKey> {
      const row = await repo.revokeKey(db, id, clock());
      if (!row) throw new ApiKeyNotFoundError(id);
      cache.delete(row.key_hash);
      return toApiKey(row, clock());
    },

    /** Resolves a presented secret to its key, or says why it does not count. */
    async authenticate(secret: string): Promise<AuthenticateResult> {
      if (!looksLikeSecret(secret)) return { ok: false, reason: 'unknown' };
      const row = await lookup(hashSecret(secret));
      if (!row) return { ok: false, reason: 'unknown' };
      const now = clock();
      const status = keyStatus(row, now);
      if (status !== 'active') return { ok: false, reason: status };
      touch(row.id, now);
      return { ok: true, key: { id: row.id, name: row.name, scopes: row.scopes as ApiKeyScope[] } };
    },
  };
}

export type KeysService = ReturnType<typeof createKeysService>;
