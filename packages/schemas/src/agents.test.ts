import { describe, expect, it } from 'vitest';
import { METADATA_MAX_DEPTH, nestsAtMost, registerBody } from './agents.ts';

const address = '0x52908400098527886e0f7030069857d2e4169ee7';

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

describe('registration metadata', () => {
  it('counts nesting without recursion, objects and arrays alike', () => {
    expect(nestsAtMost({ a: [1, { b: 2 }] }, 3)).toBe(true);
    expect(nestsAtMost({ a: [1, { b: 2 }] }, 2)).toBe(false);
    expect(nestsAtMost('text', 0)).toBe(true);
    expect(nestsAtMost(nested(100_000), 32)).toBe(false);
  });

  it(`accepts ${METADATA_MAX_DEPTH} levels and refuses deeper ones as a validation error, however deep`, () => {
    expect(registerBody.safeParse({ address, metadata: nested(METADATA_MAX_DEPTH) }).success).toBe(true);
    for (const depth of [METADATA_MAX_DEPTH + 1, 100_000]) {
      const result = registerBody.safeParse({ address, metadata: nested(depth) });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.message).toMatch(/nest deeper than 32/);
    }
  });

  it('still refuses metadata over 4 KiB and U+0000', () => {
    expect(registerBody.safeParse({ address, metadata: { a: 'x'.repeat(5000) } }).success).toBe(false);
    expect(registerBody.safeParse({ address, metadata: { a: 'x\u0000' } }).success).toBe(false);
  });

  it('counts the bytes of its UTF-8, not its characters: 4096 bytes pass, 4097 do not', () => {
    // {"a":"…"} is 8 bytes around the string; "€" is 3 bytes of UTF-8 and one character.
    const euros = (n: number, pad: number) => ({ a: '€'.repeat(n) + 'x'.repeat(pad) });
    expect(registerBody.safeParse({ address, metadata: euros(1362, 2) }).success).toBe(true); // 8 + 4086 + 2
    expect(registerBody.safeParse({ address, metadata: euros(1362, 3) }).success).toBe(false); // 4097 bytes
    const many = registerBody.safeParse({ address, metadata: euros(3000, 0) }); // 3,008 characters, 9,008 bytes
    expect(many.error?.issues[0]?.message).toBe('metadata must serialize to at most 4096 bytes');
  });
});
