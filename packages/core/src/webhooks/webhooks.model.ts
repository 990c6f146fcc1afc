import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { PREVIOUS_SECRET_MAX_SECONDS } from '@vouch/schemas';
import { isPrivateAddress } from '../shared/private-addresses.ts';

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

/** How long, unless the rotation says less, the secret a rotation replaces keeps signing deliveries. */
export const PREVIOUS_SECRET_VALID_MS = PREVIOUS_SECRET_MAX_SECONDS * 1000;

/** At most this many previous secrets sign at once: a delivery carries one signature per secret. */
export const MAX_PREVIOUS_SECRETS = 5;

/** A secret a rotation replaced, still signing deliveries until `expiresAt`. */
export interface PreviousSecret {
  secret: string;
  expiresAt: Date;
}

/**
 * The previous secrets once `current` is replaced and signs until `until`, latest first. Each
 * keeps its own time, but none signs past `until`: a rotation that stops the old secret at once
 * stops every earlier one too (a leaked secret is rotated away with all before it). Those whose
 * time is over by `now` are gone.
 */
export function retireSecret(
  previous: readonly PreviousSecret[],
  current: string,
  until: Date,
  now: Date,
): PreviousSecret[] {
  return [{ secret: current, expiresAt: until }, ...previous]
    .map((p) => ({ secret: p.secret, expiresAt: p.expiresAt < until ? p.expiresAt : until }))
    .filter((p) => p.expiresAt > now)
    .sort((a, b) => b.expiresAt.getTime() - a.expiresAt.getTime());
}

/** The secrets that sign a delivery sent at `at`: the current one, then each previous one still valid then. */
export function signingSecrets(current: string, previous: readonly PreviousSecret[], at: Date): string[] {
  return [current, ...previous.filter((p) => p.expiresAt > at).map((p) => p.secret)];
}

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

/**
 * A failure this long after the endpoint's previous one starts a new failure record: a delivery
 * still retrying fails at least this often (the schedule's longest wait, and an hour for a sweep
 * that re-queues a lost attempt), so a longer gap was a quiet spell, not a failing endpoint.
 */
export const FAILURE_STREAK_GAP_MS = Math.max(...RETRY_SCHEDULE_MS) + 3_600_000;

/** The wait before the attempt after `attempt` (1 for the first) failed; null when none is left. */
export function retryDelayMs(attempt: number): number | null {
  return attempt >= MAX_ATTEMPTS ? null : (RETRY_SCHEDULE_MS[attempt - 1] ?? null);
}

/** A receiver's answer that counts as delivered: any 2xx. Redirects are not followed and count as failures. */
export const delivered = (statusCode: number | null) => statusCode !== null && statusCode >= 200 && statusCode < 300;

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
  // A name's trailing dot (`localhost.`) names the same host.
  const bare = host.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return `targets ${host}, this host`;
  if (isIP(bare) && isPrivateAddress(bare)) return `targets ${bare}, a private, loopback or reserved address`;
  return null;
}
