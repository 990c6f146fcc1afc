import type { DB, Kysely } from '@vouch/db';
import type { ApiKey, ApiKeyScope, CreateApiKeyInput, CreatedApiKey } from '@vouch/schemas';
import type { AuditService } from '../audit/audit.service.ts';
import { findOrganization } from '../organizations/organizations.repository.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../shared/errors.ts';
import { generateSecret, grantedScopes, hashSecret, keyStatus, looksLikeSecret } from './keys.model.ts';
import * as repo from './keys.repository.ts';

export interface KeysDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** How long a looked-up key is trusted without asking the database again (other replicas see a revocation this late). */
  cacheMs?: number;
  /** `last_used_at` is written at most this often per key. */
  touchEveryMs?: number;
}

/** Who a valid key belongs to. */
export interface KeyPrincipal {
  id: string;
  organizationId: string;
  name: string;
  scopes: ApiKeyScope[];
  /** The operator's ADMIN_API_KEY: acts across organizations and counts against none. */
  operator?: true;
}

export type AuthenticateResult =
  | { ok: true; key: KeyPrincipal }
  | { ok: false; reason: 'unknown' | 'expired' | 'revoked' };

const CACHE_LIMIT = 10_000;

function toApiKey(row: repo.ApiKeyRow, now: Date): ApiKey {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    scopes: row.scopes as ApiKeyScope[],
    status: keyStatus(row, now),
    expiresAt: row.expires_at ? toUnixSeconds(row.expires_at) : null,
    createdAt: toUnixSeconds(row.created_at),
    lastUsedAt: row.last_used_at ? toUnixSeconds(row.last_used_at) : null,
    revokedAt: row.revoked_at ? toUnixSeconds(row.revoked_at) : null,
  };
}

export function createKeysService({ db, clock, audit, cacheMs = 5000, touchEveryMs = 60_000 }: KeysDeps) {
  // Hash → row (or null for an unknown hash) and when it was read.
  const cache = new Map<string, { row: repo.ApiKeyRow | null; at: number }>();
  const touched = new Map<string, number>();
  // Revocations made by this process: a read begun before one is answered but not kept, or a
  // lookup racing a revocation would put the key back, active, after the revocation dropped it.
  let revocations = 0;

  async function lookup(hash: string): Promise<repo.ApiKeyRow | null> {
    const hit = cache.get(hash);
    if (hit && Date.now() - hit.at < cacheMs) return hit.row;
    const before = revocations;
    const row = (await repo.findKeyByHash(db, hash)) ?? null;
    if (before !== revocations) return row;
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

  /**
   * Key management by an API key: the key is read again under a lock in the change's transaction,
   * so that nothing it does commits after its revocation was answered. A key authenticated just
   * before its revocation and acting after it is refused (401); a revocation coming while it acts
   * waits for it. (The operator's ADMIN_API_KEY is not a stored key.) `revoking`: the key the
   * change revokes, locked with the acting one in id order, so that two keys revoking each other
   * at once wait for each other rather than deadlock.
   */
  async function assertStillValid(
    trx: Kysely<DB>,
    actor: Actor,
    now: Date,
    revoking?: string,
  ): Promise<repo.ApiKeyRow | null> {
    if (actor.kind !== 'key' || actor.keyId === null) return null;
    const rows = await repo.lockKeys(trx, revoking === undefined ? [actor.keyId] : [actor.keyId, revoking]);
    const row = rows.find((r) => r.id === actor.keyId);
    const status = row ? keyStatus(row, now) : 'revoked';
    if (!row || status !== 'active') throw new UnauthorizedError(`the API key is ${status}`);
    return row;
  }

  return {
    /**
     * Creates a key in the actor's organization; the operator may name another organization
     * (the first key of a new one).
     */
    async create(actor: Actor, input: CreateApiKeyInput): Promise<CreatedApiKey> {
      const now = clock();
      if (input.expiresAt !== undefined && input.expiresAt <= toUnixSeconds(now)) {
        throw new ValidationError([{ path: 'body.expiresAt', message: 'must be in the future' }]);
      }
      const organizationId = input.organizationId ?? actor.organizationId;
      if (organizationId !== actor.organizationId && !actor.operator) {
        throw new ForbiddenError('only the operator (ADMIN_API_KEY) creates keys for another organization');
      }
      const { id, secret } = generateSecret();
      const row = await db.transaction().execute(async (trx) => {
        const creator = await assertStillValid(trx, actor, now);
        // A key that expires makes keys that expire with it at the latest: a key lent for a day
        // cannot leave behind one that outlives the loan.
        const creatorExpires = creator?.expires_at ? toUnixSeconds(creator.expires_at) : null;
        if (creatorExpires !== null && (input.expiresAt === undefined || input.expiresAt > creatorExpires)) {
          throw new ValidationError([
            {
              path: 'body.expiresAt',
              message: `must be at most ${creatorExpires}, when the key that creates it expires`,
            },
          ]);
        }
        if (!(await findOrganization(trx, organizationId))) {
          throw new ValidationError([{ path: 'body.organizationId', message: `no organization ${organizationId}` }]);
        }
        const row = await repo.insertKey(trx, {
          id,
          organizationId,
          name: input.name,
          keyHash: hashSecret(secret),
          scopes: grantedScopes(input.scopes),
          expiresAt: input.expiresAt !== undefined ? new Date(input.expiresAt * 1000) : null,
          now,
        });
        await audit.append(
          trx,
          { ...actor, organizationId },
          'key.created',
          null,
          { keyId: id, name: row.name, scopes: row.scopes, expiresAt: input.expiresAt ?? null },
          now,
        );
        return row;
      });
      const created = toApiKey(row, now);
      return {
        id: created.id,
        organizationId: created.organizationId,
        name: created.name,
        scopes: created.scopes,
        expiresAt: created.expiresAt,
        createdAt: created.createdAt,
        key: secret,
      };
    },

    /** The organization's keys; every organization's for the operator. */
    async list(actor: Actor): Promise<{ keys: ApiKey[] }> {
      const now = clock();
      const rows = await repo.listKeys(db, actor.operator ? null : actor.organizationId);
      return { keys: rows.map((row) => toApiKey(row, now)) };
    },

    /** Revokes a key of the organization (any organization's for the operator). */
    async revoke(actor: Actor, id: string): Promise<ApiKey> {
      const now = clock();
      const found = await db.transaction().execute(async (trx) => {
        // A key revoking itself takes its own row's lock for the update below in any case.
        if (actor.keyId !== id) await assertStillValid(trx, actor, now, id);
        const found = await repo.revokeKey(trx, id, actor.operator ? null : actor.organizationId, now);
        if (found?.revoked) {
          await audit.append(
            trx,
            { ...actor, organizationId: found.row.organization_id },
            'key.revoked',
            null,
            { keyId: id, name: found.row.name },
            now,
          );
        }
        return found;
      });
      if (!found) throw new NotFoundError(`no API key ${id}`);
      revocations++;
      cache.delete(found.row.key_hash);
      return toApiKey(found.row, now);
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
      return {
        ok: true,
        key: { id: row.id, organizationId: row.organization_id, name: row.name, scopes: row.scopes as ApiKeyScope[] },
      };
    },
  };
}

export type KeysService = ReturnType<typeof createKeysService>;
