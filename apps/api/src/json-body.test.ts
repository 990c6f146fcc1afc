import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasDuplicateMember, hasLoneSurrogate } from './json-body.ts';

describe('hasDuplicateMember', () => {
  it('finds a member named twice in one object, at any depth, names compared decoded', () => {
    expect(hasDuplicateMember('{"amount":"1","amount":"1000"}')).toBe(true);
    expect(hasDuplicateMember('{"a":{"b":1,"c":[{"d":1,"d":2}]}}')).toBe(true);
    expect(hasDuplicateMember('{"a\\u0062":1,"ab":2}')).toBe(true);
    expect(hasDuplicateMember('{"a\\"":1,"a\\"":2}')).toBe(true);
  });

  it('lets the same name in different objects, in values and in arrays through', () => {
    expect(hasDuplicateMember('{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}')).toBe(false);
    expect(hasDuplicateMember('{"a":"a","b":["a","a"],"c":"\\"a\\":1,\\"a\\":2"}')).toBe(false);
    expect(hasDuplicateMember('["x","x"]')).toBe(false);
    expect(hasDuplicateMember('{}')).toBe(false);
    expect(hasDuplicateMember('"a"')).toBe(false);
  });

  it('never on what JSON.stringify writes, always once a member is written twice', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(hasDuplicateMember(JSON.stringify(value))).toBe(false);
      }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }), fc.jsonValue(), (object, value) => {
        const text = JSON.stringify(object);
        const first = Object.keys(object)[0] as string;
        // The same name again, as the last member, written with every character escaped.
        const escaped = first
          .split('')
          .map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
          .join('');
        const twice = `${text.slice(0, -1)},"${escaped}":${JSON.stringify(value)}}`;
        expect(hasDuplicateMember(twice)).toBe(true);
      }),
    );
  });
});

describe('hasLoneSurrogate', () => {
  it('finds half a surrogate pair escaped alone, in a name or a value, wherever it stands', () => {
    for (const text of [
      '"\\ud800"',
      '"\\udc00"',
      '"\\udc00\\ud800"',
      '"\\ud800x\\udc00"',
      '"\\ud800\\n"',
      '"\\ud800\\ud800\\udc00"',
      '"\\ud83d","\\udd11"',
      '{"\\uDBFF":1}',
      '["ok","\\\\","\\uDFFF"]',
    ]) {
      expect(hasLoneSurrogate(text), text).toBe(true);
    }
  });

  it('lets pairs, other escapes and an escaped backslash before "ud800" through', () => {
    for (const text of ['"\\ud83d\\udd11"', '"\\uD83D\\uDD11 \\u0041\\n"', '"\\\\ud800"', '"🔑"', '{}', '"\\ufffd"']) {
      expect(hasLoneSurrogate(text), text).toBe(false);
    }
  });

  it('never on what JSON.stringify writes of well-formed strings, always once one is escaped alone', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(hasLoneSurrogate(JSON.stringify(value))).toBe(false);
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0xd800, max: 0xdfff }), (value, unit) => {
        // JSON.stringify escapes a lone surrogate (ES2019).
        expect(hasLoneSurrogate(JSON.stringify([value, String.fromCharCode(unit)]))).toBe(true);
      }),
    );
  });
});
