import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../shared/private-addresses.ts';
import {
  literalTargetProblem,
  MAX_ATTEMPTS,
  newSecret,
  RETRY_SCHEDULE_MS,
  retireSecret,
  retryDelayMs,
  sign,
  signatureHeader,
  signingSecrets,
} from './webhooks.model.ts';

describe('secrets and signatures', () => {
  it('makes Standard Webhooks secrets: whsec_ and 32 random bytes in base64', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSecret()).not.toBe(secret);
  });

  it('signs id.timestamp.body with HMAC-SHA256 keyed by the decoded secret', () => {
    const key = Buffer.alloc(32, 7);
    const secret = `whsec_${key.toString('base64')}`;
    const expected = createHmac('sha256', key).update('evt_1.1700000000.{"a":1}').digest('base64');
    expect(sign(secret, 'evt_1', 1700000000, '{"a":1}')).toBe(`v1,${expected}`);
    const both = signatureHeader([secret, newSecret()], 'evt_1', 1700000000, '{"a":1}');
    expect(both.split(' ')).toHaveLength(2);
    expect(both.split(' ')[0]).toBe(`v1,${expected}`);
  });
});

describe('previous secrets', () => {
  const at = (hours: number) => new Date(Date.UTC(2026, 0, 1) + hours * 3_600_000);
  const shown = (list: Array<{ secret: string; expiresAt: Date }>) =>
    list.map((p) => [p.secret, (p.expiresAt.getTime() - at(0).getTime()) / 3_600_000]);

  it('keeps an earlier previous secret until its own time when a second rotation comes within it', () => {
    const first = retireSecret([], 's0', at(24), at(0));
    const second = retireSecret(first, 's1', at(25), at(1));
    expect(shown(second)).toEqual([
      ['s1', 25],
      ['s0', 24],
    ]);
    expect(signingSecrets('s2', second, at(23))).toEqual(['s2', 's1', 's0']);
    expect(signingSecrets('s2', second, at(24))).toEqual(['s2', 's1']);
    expect(signingSecrets('s2', second, at(25))).toEqual(['s2']);
  });

  it('lets no previous secret outlive a shorter rotation, and a rotation with no time stops them all', () => {
    const kept = retireSecret(
      [
        { secret: 's1', expiresAt: at(22) },
        { secret: 's0', expiresAt: at(20) },
      ],
      's2',
      at(11),
      at(10),
    );
    expect(shown(kept)).toEqual([
      ['s2', 11],
      ['s1', 11],
      ['s0', 11],
    ]);
    expect(retireSecret(kept, 's3', at(10), at(10))).toEqual([]);
  });

  it('forgets previous secrets whose time is over', () => {
    expect(shown(retireSecret([{ secret: 's0', expiresAt: at(5) }], 's1', at(30), at(6)))).toEqual([['s1', 30]]);
  });
});

describe('the retry schedule', () => {
  it('reaches about a day over eight attempts and then stops', () => {
    const total = RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(MAX_ATTEMPTS).toBe(8);
    expect(total).toBeGreaterThan(22 * 3_600_000);
    expect(total).toBeLessThan(25 * 3_600_000);
    expect(retryDelayMs(1)).toBe(5000);
    expect(retryDelayMs(MAX_ATTEMPTS - 1)).toBe(RETRY_SCHEDULE_MS[RETRY_SCHEDULE_MS.length - 1]);
    expect(retryDelayMs(MAX_ATTEMPTS)).toBeNull();
  });
});

describe('private addresses', () => {
  it('covers this host, private networks, link-local, reserved and their IPv6 forms', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '0.0.0.0',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a00:1',
      '2002:7f00:1::1',
      // IPv4-compatible (deprecated), and NAT64's local-use prefix.
      '::7f00:1',
      '::127.0.0.1',
      '64:ff9b:1::a00:1',
      // IPv4-translated (SIIT), as the URL parser writes it and dotted; Teredo.
      '::ffff:0:7f00:1',
      '::ffff:0:a9fe:a9fe',
      '::ffff:0:127.0.0.1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      // Benchmarking (RFC 5180) and the second documentation range (RFC 9637), as 2001:db8::/32.
      '2001:2::1',
      '2001:db8::1',
      '3fff::1',
      '3fff:fff:ffff::1',
      '[::1]',
      'not an address',
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700:4700::1111',
      '2001:3::1',
      '4000::1',
      '::ffff:8.8.8.8',
      '::ffff:0:808:808',
    ]) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it('refuses literal private hosts and localhost in a URL before anything is resolved', () => {
    expect(literalTargetProblem('http://127.0.0.1:3000/x')).toMatch(/127\.0\.0\.1/);
    expect(literalTargetProblem('http://localhost/x')).toMatch(/this host/);
    expect(literalTargetProblem('http://api.localhost/x')).toMatch(/this host/);
    expect(literalTargetProblem('http://localhost./x')).toMatch(/this host/);
    expect(literalTargetProblem('http://api.localhost./x')).toMatch(/this host/);
    expect(literalTargetProblem('http://[::ffff:10.0.0.1]/x')).toMatch(/private/);
    expect(literalTargetProblem('http://0177.0.0.1/x')).toMatch(/private/);
    expect(literalTargetProblem('https://example.com/hooks')).toBeNull();
    expect(literalTargetProblem('https://8.8.8.8/hooks')).toBeNull();
  });
});
