import { createHmac, randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';

/**
 * Webhook rules: secrets, Standard Webhooks signatures, the retry schedule and which target
 * addresses count as private (docs/events.md).
 */

/** `whsec_` + base64 of 32 random bytes: the Standard Webhooks secret format (the key is the decoded bytes). */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `wh_` + 16 hex digits. */
export function newWebhookId(): string {
  return `wh_${randomBytes(8).toString('hex')}`;
}

/**
 * The Standard Webhooks signature of one message: `v1,` + base64 of HMAC-SHA256, keyed with the
 * secret's decoded bytes, over `<webhook-id>.<webhook-timestamp>.<body>`.
 */
export function sign(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per valid secret, space-separated (the spec allows several). */
export function signatureHeader(secrets: string[], messageId: string, timestamp: number, body: string): string {
  return secrets.map((secret) => sign(secret, messageId, timestamp, body)).join(' ');
}

/** How long the secret before a rotation keeps signing deliveries. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3_600_000;

/**
 * Waits after each failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 6 h. Eight attempts; the
 * last is 23 h 35 min after the first, so a receiver down for up to a day still gets the event.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  6 * 3_600_000,
];
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

/** The wait before the attempt after `attempt` (1 for the first) failed; null when none is left. */
export function retryDelayMs(attempt: number): number | null {
  return attempt >= MAX_ATTEMPTS ? null : (RETRY_SCHEDULE_MS[attempt - 1] ?? null);
}

/** A receiver's answer that counts as delivered: any 2xx. Redirects are not followed and count as failures. */
export const delivered = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode < 300;

// Addresses a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE_TARGETS is on: this host,
// private networks, link-local (cloud metadata at 169.254.169.254), shared, reserved,
// documentation, benchmarking and multicast ranges.
const privateRanges = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), if any. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^64:ff9b::(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped?.[1]) return mapped[1];
  const words = expandIpv6(lower);
  if (!words) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (words.slice(0, 6).join(':') === '0:0:0:0:0:65535') return v4(words[6] as number, words[7] as number);
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) {
    return v4(words[6] as number, words[7] as number);
  }
  if (words[0] === 0x2002) return v4(words[1] as number, words[2] as number);
  return null;
}

/** The eight 16-bit words of an IPv6 address (without an embedded dotted quad), or null. */
function expandIpv6(address: string): number[] | null {
  if (address.includes('.')) return null;
  const [head, tail, ...rest] = address.split('::');
  if (rest.length) return null;
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? left.length !== 8 : missing < 0) return null;
  const words = [...left, ...Array(tail === undefined ? 0 : missing).fill('0'), ...right].map((w) =>
    Number.parseInt(w, 16),
  );
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}

/** Whether an IP address (v4 or v6) is one a webhook may not reach by default. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return privateRanges.check(bare, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  const v4 = embeddedIpv4(bare);
  if (v4) return privateRanges.check(v4, 'ipv4');
  return privateRanges.check(bare, 'ipv6');
}

/**
 * Why a URL's host is refused before anything is resolved (an IP literal in a private range, or
 * `localhost`), or null. Names are checked again, against every address they resolve to, when a
 * delivery connects.
 */
export function literalTargetProblem(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return 'is not a URL';
  }
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return `targets ${host}, this host`;
  if (isIP(bare) && isPrivateAddress(bare)) return `targets ${bare}, a private, loopback or reserved address`;
  return null;
}
