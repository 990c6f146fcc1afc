import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.ts';

describe('canonicalJson', () => {
  it('does not depend on key order', () => {
    const a = canonicalJson({ b: 2, a: 1, c: 3 });
    const b = canonicalJson({ c: 3, a: 1, b: 2 });
    expect(a).toBe(b);
    expect(a).toBe('{"a":1,"b":2,"c":3}');
  });

  it('sorts keys of nested objects, including objects inside arrays', () => {
    const x = { z: { y: 1, x: [{ b: 1, a: 2 }, 3] }, a: null };
    const y = { a: null, z: { x: [{ a: 2, b: 1 }, 3], y: 1 } };
    expect(canonicalJson(x)).toBe('{"a":null,"z":{"x":[{"a":2,"b":1},3],"y":1}}');
    expect(canonicalJson(x)).toBe(canonicalJson(y));
  });

  it('drops undefined values at every level', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
    expect(canonicalJson({ a: { b: undefined, c: 2 } })).toBe('{"a":{"c":2}}');
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });

  it('keeps array order', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson([3, 1, 2])).not.toBe(canonicalJson([1, 2, 3]));
    expect(canonicalJson([{ b: 1 }, { a: 1 }])).toBe('[{"b":1},{"a":1}]');
  });

  it('encodes primitives like JSON.stringify', () => {
    for (const v of [null, true, false, 0, -1.5, 'a"b\\c', '', 'ü']) expect(canonicalJson(v)).toBe(JSON.stringify(v));
  });

  it('produces valid JSON that round-trips to an equal value', () => {
    const value = { s: 'x', n: 1, list: [1, 'two', { k: true }], nested: { deep: { deeper: [] } }, empty: {} };
    const text = canonicalJson(value);
    expect(JSON.parse(text)).toEqual(value);
    expect(text).toBe('{"empty":{},"list":[1,"two",{"k":true}],"n":1,"nested":{"deep":{"deeper":[]}},"s":"x"}');
  });

  it('sorts keys by code unit, so different objects stay different', () => {
    expect(canonicalJson({ B: 1, a: 2, _: 3 })).toBe('{"B":1,"_":3,"a":2}');
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
  });
});
