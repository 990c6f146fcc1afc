import { describe, expect, it } from 'vitest';
import {
  address,
  amount,
  hexBytes,
  MAX_UINT256,
  normalizeAddress,
  parseAmount,
  positiveAmount,
  txHash,
} from './primitives.ts';

const CHECKSUM_A = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const CHECKSUMMED = [CHECKSUM_A, '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'];

/** Flips the case of the hex letter (a–f / A–F) at index `i` of the hex part. */
function flipAt(addr: string, i: number): string {
  const hex = addr.slice(2);
  const c = hex.charAt(i);
  const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
  return `0x${hex.slice(0, i)}${flipped}${hex.slice(i + 1)}`;
}

/** Flips the case of the first letter in the hex part. */
const flipOneLetter = (addr: string) => flipAt(addr, addr.slice(2).search(/[a-fA-F]/));

/** Flips the case of the last letter in the hex part. */
const flipLastLetter = (addr: string) => {
  const hex = addr.slice(2);
  return flipAt(
    addr,
    hex.length -
      1 -
      [...hex]
        .reverse()
        .join('')
        .search(/[a-fA-F]/),
  );
};

const MAX_STR = (2n ** 256n - 1n).toString();
const OVER_STR = (2n ** 256n).toString();

describe('normalizeAddress', () => {
  it('accepts an all-lowercase address unchanged', () => {
    const a = '0x52908400098527886e0f7030069857d2e4169ee7';
    expect(normalizeAddress(a)).toBe(a);
  });

  it('accepts all-uppercase hex and lowercases it', () => {
    expect(normalizeAddress('0x52908400098527886E0F7030069857D2E4169EE7')).toBe(
      '0x52908400098527886e0f7030069857d2e4169ee7',
    );
  });

  it.each(CHECKSUMMED)('accepts valid EIP-55 mixed case %s and returns it lowercase', (a) => {
    expect(normalizeAddress(a)).toBe(a.toLowerCase());
  });

  it.each(CHECKSUMMED)('rejects %s with one letter case flipped', (a) => {
    const first = flipOneLetter(a);
    const last = flipLastLetter(a);
    expect(first).not.toBe(a);
    expect(first.toLowerCase()).toBe(a.toLowerCase());
    expect(normalizeAddress(first)).toBeNull();
    expect(normalizeAddress(last)).toBeNull();
  });

  it('rejects a wrong length', () => {
    expect(normalizeAddress('0x52908400098527886e0f7030069857d2e4169ee')).toBeNull();
    expect(normalizeAddress('0x52908400098527886e0f7030069857d2e4169ee77')).toBeNull();
    expect(normalizeAddress('0x')).toBeNull();
    expect(normalizeAddress('')).toBeNull();
  });

  it('rejects a missing 0x prefix', () => {
    expect(normalizeAddress('52908400098527886e0f7030069857d2e4169ee7')).toBeNull();
    expect(normalizeAddress('0052908400098527886e0f7030069857d2e4169ee7')).toBeNull();
  });

  it('rejects a 0X prefix', () => {
    expect(normalizeAddress('0X52908400098527886e0f7030069857d2e4169ee7')).toBeNull();
  });

  it('rejects non-hex characters and surrounding whitespace', () => {
    expect(normalizeAddress('0x52908400098527886e0f7030069857d2e4169eeg')).toBeNull();
    expect(normalizeAddress(' 0x52908400098527886e0f7030069857d2e4169ee7')).toBeNull();
    expect(normalizeAddress('0x52908400098527886e0f7030069857d2e4169ee7 ')).toBeNull();
  });
});

describe('parseAmount', () => {
  it('parses 0 and 1', () => {
    expect(parseAmount('0')).toBe(0n);
    expect(parseAmount('1')).toBe(1n);
  });

  it('parses 2^256 - 1 exactly', () => {
    expect(MAX_UINT256).toBe(2n ** 256n - 1n);
    expect(MAX_STR).toHaveLength(78);
    expect(parseAmount(MAX_STR)).toBe(2n ** 256n - 1n);
  });

  it('rejects 2^256', () => {
    expect(OVER_STR).toHaveLength(78);
    expect(parseAmount(OVER_STR)).toBeNull();
  });

  it('rejects a 79-digit string', () => {
    const s = `1${'0'.repeat(78)}`;
    expect(s).toHaveLength(79);
    expect(parseAmount(s)).toBeNull();
  });

  it.each(['01', '00', '-1', '+1', '1.5', '1.0', '1e18', ' 1', '1 ', '', '0x10', 'abc', '１'])('rejects %j', (s) => {
    expect(parseAmount(s)).toBeNull();
  });
});

describe('address schema', () => {
  it('accepts and lowercases a valid checksummed address', () => {
    for (const a of CHECKSUMMED) {
      const r = address.safeParse(a);
      expect(r.success).toBe(true);
      expect(r.data).toBe(a.toLowerCase());
    }
  });

  it('accepts lowercase and all-uppercase hex', () => {
    expect(address.safeParse('0x52908400098527886e0f7030069857d2e4169ee7').data).toBe(
      '0x52908400098527886e0f7030069857d2e4169ee7',
    );
    expect(address.safeParse('0x52908400098527886E0F7030069857D2E4169EE7').data).toBe(
      '0x52908400098527886e0f7030069857d2e4169ee7',
    );
  });

  it('rejects a bad checksum, bad shape and non-strings', () => {
    expect(address.safeParse(flipOneLetter(CHECKSUM_A)).success).toBe(false);
    expect(address.safeParse('0X52908400098527886e0f7030069857d2e4169ee7').success).toBe(false);
    expect(address.safeParse('0x1234').success).toBe(false);
    expect(address.safeParse(123).success).toBe(false);
    expect(address.safeParse(undefined).success).toBe(false);
  });
});

describe('amount schema', () => {
  it('accepts 0, 1 and 2^256 - 1 and keeps them as strings', () => {
    for (const s of ['0', '1', MAX_STR]) {
      const r = amount.safeParse(s);
      expect(r.success).toBe(true);
      expect(r.data).toBe(s);
    }
  });

  it('rejects invalid amounts and non-strings', () => {
    for (const s of [OVER_STR, '01', '-1', '1.5', '1e18', ' 1', '']) expect(amount.safeParse(s).success).toBe(false);
    expect(amount.safeParse(1).success).toBe(false);
    expect(amount.safeParse(1n).success).toBe(false);
  });
});

describe('positiveAmount schema', () => {
  it('rejects 0', () => {
    expect(positiveAmount.safeParse('0').success).toBe(false);
  });

  it('accepts 1 and 2^256 - 1', () => {
    expect(positiveAmount.safeParse('1').data).toBe('1');
    expect(positiveAmount.safeParse(MAX_STR).data).toBe(MAX_STR);
  });

  it('still rejects what amount rejects', () => {
    for (const s of [OVER_STR, '00', '-1', '1.5', '']) expect(positiveAmount.safeParse(s).success).toBe(false);
  });
});

describe('hexBytes schema', () => {
  it("accepts '0x' (empty bytes)", () => {
    const r = hexBytes.safeParse('0x');
    expect(r.success).toBe(true);
    expect(r.data).toBe('0x');
  });

  it('accepts even-length hex', () => {
    expect(hexBytes.safeParse('0xabcd').data).toBe('0xabcd');
  });

  it('lowercases uppercase hex', () => {
    expect(hexBytes.safeParse('0xABCDEF').data).toBe('0xabcdef');
  });

  it("rejects odd length '0xabc'", () => {
    expect(hexBytes.safeParse('0xabc').success).toBe(false);
  });

  it("rejects 'abcd' without 0x", () => {
    expect(hexBytes.safeParse('abcd').success).toBe(false);
  });

  it('rejects non-hex characters', () => {
    expect(hexBytes.safeParse('0xzz').success).toBe(false);
  });

  it('accepts 4096 bytes and rejects 4097', () => {
    expect(hexBytes.safeParse(`0x${'ab'.repeat(4096)}`).success).toBe(true);
    expect(hexBytes.safeParse(`0x${'ab'.repeat(4097)}`).success).toBe(false);
  });
});

describe('txHash schema', () => {
  const hash = `0x${'a1B2'.repeat(16)}`;

  it('accepts 0x + 64 hex and lowercases it', () => {
    const r = txHash.safeParse(hash);
    expect(r.success).toBe(true);
    expect(r.data).toBe(hash.toLowerCase());
  });

  it('rejects the wrong length, a missing prefix and non-hex', () => {
    expect(txHash.safeParse(hash.slice(0, -1)).success).toBe(false);
    expect(txHash.safeParse(`${hash}0`).success).toBe(false);
    expect(txHash.safeParse(hash.slice(2)).success).toBe(false);
    expect(txHash.safeParse(`0x${'g'.repeat(64)}`).success).toBe(false);
  });
});
