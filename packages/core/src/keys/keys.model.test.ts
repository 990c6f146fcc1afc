import { describe, expect, it } from 'vitest';
import {
  generateSecret,
  grantedScopes,
  hashSecret,
  keyStatus,
  looksLikeSecret,
  scopeAllows,
  secretsEqual,
} from './keys.model.ts';

describe('scopes', () => {
  it('admin implies every scope; every other scope implies read and nothing else', () => {
    for (const scope of ['read', 'spend', 'manage', 'approve', 'score', 'admin'] as const) {
      expect(scopeAllows(['admin'], scope)).toBe(true);
    }
    for (const held of ['spend', 'manage', 'approve', 'score'] as const) {
      expect(scopeAllows([held], held)).toBe(true);
      expect(scopeAllows([held], 'read')).toBe(true);
      expect(scopeAllows([held], 'admin')).toBe(false);
      for (const other of ['spend', 'manage', 'approve', 'score'] as const) {
        if (other !== held) expect(scopeAllows([held], other), `${held} → ${other}`).toBe(false);
      }
    }
    expect(scopeAllows(['read'], 'read')).toBe(true);
    expect(scopeAllows(['read'], 'spend')).toBe(false);
    expect(scopeAllows([], 'read')).toBe(false);
    expect(scopeAllows(['bogus'], 'read')).toBe(false);
    // A key stored before the finer scopes, never migrated, grants nothing it does not name.
    expect(scopeAllows(['write'], 'read')).toBe(false);
  });

  it('grants write as spend, manage and score, in canonical order without repeats', () => {
    expect(grantedScopes(['write'])).toEqual(['spend', 'manage', 'score']);
    expect(grantedScopes(['score', 'read', 'write', 'spend'])).toEqual(['read', 'spend', 'manage', 'score']);
    expect(grantedScopes(['admin', 'approve'])).toEqual(['approve', 'admin']);
  });
});

describe('secrets', () => {
  it('are random, carry their id, and have the recognizable shape', () => {
    const a = generateSecret();
    const b = generateSecret();
    expect(a.secret).not.toBe(b.secret);
    expect(a.secret.startsWith(`vk_${a.id}_`)).toBe(true);
    expect(looksLikeSecret(a.secret)).toBe(true);
    expect(looksLikeSecret(`${a.secret}x`)).toBe(false);
    expect(looksLikeSecret('Bearer nonsense')).toBe(false);
  });

  it('are stored as a sha256 hash, never as themselves', () => {
    const { secret } = generateSecret();
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret(secret)).not.toContain(secret);
    expect(hashSecret(secret)).toBe(hashSecret(secret));
  });

  it('compare in constant time whatever their lengths', () => {
    expect(secretsEqual('admin-secret-0123456789', 'admin-secret-0123456789')).toBe(true);
    expect(secretsEqual('admin-secret-0123456789', 'admin-secret-012345678')).toBe(false);
    expect(secretsEqual('', 'x')).toBe(false);
  });
});

describe('keyStatus', () => {
  const now = new Date('2026-05-01T00:00:00Z');
  it('is revoked before expired, expired at the expiry instant, else active', () => {
    expect(keyStatus({ revoked_at: null, expires_at: null }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: new Date(now.getTime() + 1000) }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: now }, now)).toBe('expired');
    expect(keyStatus({ revoked_at: now, expires_at: new Date(0) }, now)).toBe('revoked');
  });
});
