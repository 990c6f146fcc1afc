import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type ApiKeyScope, apiKeyScopes, type RequestedScope } from '@vouch/schemas';

/** `vk_<16 hex id>_<43 base64url chars of 32 random bytes>`. */
const SECRET_RE = /^vk_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

/** Each scope and the scopes it implies: every scope reads; admin may do everything. */
const implied: Record<ApiKeyScope, readonly ApiKeyScope[]> = {
  read: ['read'],
  spend: ['spend', 'read'],
  manage: ['manage', 'read'],
  approve: ['approve', 'read'],
  score: ['score', 'read'],
  admin: apiKeyScopes,
};

/** The scopes a key is created with, in canonical order: `write` (the scope before the finer ones) is spend, manage and score. */
export function grantedScopes(requested: readonly RequestedScope[]): ApiKeyScope[] {
  const wanted = new Set<string>(requested.flatMap((s) => (s === 'write' ? ['spend', 'manage', 'score'] : [s])));
  return apiKeyScopes.filter((s) => wanted.has(s));
}

/** Whether a key holding `scopes` may do what `required` allows. */
export function scopeAllows(scopes: readonly string[], required: ApiKeyScope): boolean {
  return scopes.some((s) => (implied[s as ApiKeyScope] ?? []).includes(required));
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** A new key: its public id and the secret shown to the caller once. */
export function generateSecret(): { id: string; secret: string } {
  const id = randomBytes(8).toString('hex');
  return { id, secret: `vk_${id}_${randomBytes(32).toString('base64url')}` };
}

/** Whether a string has the shape of a secret this service issues (saves a lookup for junk). */
export function looksLikeSecret(value: string): boolean {
  return SECRET_RE.test(value);
}

/** Constant-time comparison of two secrets through their hashes (equal lengths, no early exit). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

export function keyStatus(row: { revoked_at: Date | null; expires_at: Date | null }, now: Date): KeyStatus {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}
