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
});
