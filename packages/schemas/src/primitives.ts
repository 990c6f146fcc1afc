import { checksumAddress } from 'viem';
import { z } from 'zod';

/** 2^256 − 1: the largest amount an EVM uint256 (and our numeric(78,0) CHECK) holds. */
export const MAX_UINT256 = 2n ** 256n - 1n;

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const LOWER_ADDRESS_RE = /^0x[0-9a-f]{40}$/;
const AMOUNT_RE = /^(0|[1-9][0-9]*)$/;

/**
 * Normalizes an EVM address to lowercase. All-lowercase and all-uppercase hex are
 * accepted as unchecksummed; mixed case must be a valid EIP-55 checksum.
 * Returns null when the input is not an acceptable address.
 */
export function normalizeAddress(input: string): string | null {
  if (!ADDRESS_RE.test(input)) return null;
  const hex = input.slice(2);
  const lower = hex.toLowerCase();
  if (hex !== lower && hex !== hex.toUpperCase()) {
    if (checksumAddress(`0x${lower}`) !== input) return null;
  }
  return `0x${lower}`;
}

/** Parses a decimal integer string in base units; null unless 0 ≤ x ≤ 2^256−1. */
export function parseAmount(input: string): bigint | null {
  if (input.length > 78 || !AMOUNT_RE.test(input)) return null;
  const value = BigInt(input);
  return value <= MAX_UINT256 ? value : null;
}

// The format as a regex, so that the OpenAPI document states it as the `pattern`; the checksum
// (which no pattern can express) is only checked of a value in that format.
export const address = z
  .string()
  .regex(ADDRESS_RE, 'must be 0x followed by 40 hex characters')
  // Lowercase, as nearly every address sent is, needs no checksum: one more regex, not three.
  .refine((value) => LOWER_ADDRESS_RE.test(value) || !ADDRESS_RE.test(value) || normalizeAddress(value) !== null, {
    message: 'mixed-case address fails its EIP-55 checksum',
  })
  // In place, not a transform: a transform wraps the string in a pipe, which tripled the time
  // zod takes over a decision's two addresses (1.3 against 0.4 µs).
  .overwrite((value) => value.toLowerCase())
  .meta({
    description: 'EVM address (0x + 40 hex). Mixed case must be EIP-55. Returned lowercase.',
    example: '0x52908400098527886e0f7030069857d2e4169ee7',
  });

const AMOUNT_MESSAGE = 'must be a decimal integer string from 0 to 2^256-1 without sign, spaces or leading zeros';

/**
 * A decimal integer string 0 … 2^256−1 (wei). The format and the length are stated as checks the
 * OpenAPI document shows (`pattern`, `maxLength`); the bound within 78 digits only by the refinement.
 */
export const amount = z
  .string()
  .max(78, AMOUNT_MESSAGE)
  .regex(AMOUNT_RE, AMOUNT_MESSAGE)
  .refine((value) => value.length > 78 || !AMOUNT_RE.test(value) || parseAmount(value) !== null, {
    message: AMOUNT_MESSAGE,
  })
  .meta({ description: 'Decimal integer string in base units (wei), 0 … 2^256−1', example: '1000000000000000000' });

/** Like `amount` but strictly greater than zero (checks, spends, recorded transactions). */
export const positiveAmount = amount
  .refine((value) => value !== '0', { message: 'must be greater than 0' })
  .meta({ description: 'Decimal integer string in base units (wei), 1 … 2^256−1', example: '250000000000000000' });

/** Hex-encoded bytes: 0x followed by an even number of hex digits (at most 4 KiB decoded). */
export const hexBytes = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x followed by an even number of hex digits')
  .max(2 + 8192, 'at most 4096 bytes')
  .transform((value) => value.toLowerCase())
  .meta({ description: 'Hex-encoded bytes', example: '0x6d616e75616c2072657669657721' });

export const txHash = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hex characters')
  .transform((value) => value.toLowerCase())
  .meta({ description: 'Transaction hash (0x + 64 hex), returned lowercase' });

/** The last second of the year 9999: what is later is no date a database or a `Date` keeps. */
export const MAX_UNIX_SECONDS = 253_402_300_799;

/** Integer unix seconds. */
export const unixSeconds = z
  .number()
  .int()
  .nonnegative()
  .max(MAX_UNIX_SECONDS)
  .meta({ description: 'Unix time in seconds' });

/**
 * A whole number in a query string: digits only, so an empty value (`?to=`) is a 400 rather than
 * the 0 that coercing it would give, and `1e3` or ` 7` are not numbers here either.
 */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'expected a whole number')
    .pipe(z.coerce.number<string>().int().min(min).max(max))
    // The OpenAPI document describes the text by what it must hold: a whole number and its bounds.
    .meta({ type: 'integer', minimum: min, maximum: max });

/** Integer unix seconds in a query string. */
export const queryUnixSeconds = queryInteger(0, MAX_UNIX_SECONDS);

/**
 * A list's query with a time filter besides `shape`: `from` (inclusive) and `to` (exclusive) in
 * unix seconds, `from` before `to`; no other parameter.
 */
export function timeRangedQuery<S extends z.ZodRawShape>(shape: S) {
  return z
    .strictObject({
      ...shape,
      from: queryUnixSeconds.optional().meta({ description: 'Unix seconds, inclusive' }),
      to: queryUnixSeconds.optional().meta({ description: 'Unix seconds, exclusive' }),
    })
    .refine(
      (q) => {
        // Its own two fields, whatever `shape` adds (the generic output does not name them).
        const { from, to } = q as { from?: number; to?: number };
        return from === undefined || to === undefined || from < to;
      },
      {
        message: 'from must be before to',
        path: ['from'],
      },
    );
}

/** A list's page size in a query string: 1 to `max`, `fallback` when absent. */
export const pageLimit = (max = 1000, fallback = 100) => queryInteger(1, max).default(fallback);

export const scoreValue = z.number().int().min(0).max(1000);
export const gradeValue = z.enum(['AAA', 'AA', 'A', 'BBB', 'BB', 'B', 'CCC', 'CC', 'C', 'D']);
export const colorValue = z.string().regex(/^#[0-9A-F]{6}$/);

/** Query-string booleans arrive as text. */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

/**
 * The body of a write that takes no fields: none, or `{}`. A field sent anyway (an
 * `expectedVersion` on a delete, say) is refused (400) rather than silently ignored.
 */
export const noBody = z.strictObject({}).nullish();
