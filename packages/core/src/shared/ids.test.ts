import { describe, expect, it } from 'vitest';
import { timeOrderedId } from './ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedId', () => {
  it('is a version 7 UUID whose first 48 bits are the milliseconds it was made at', () => {
    const ms = Date.UTC(2026, 10, 26, 14, 45, 1, 234);
    const id = timeOrderedId(ms);
    expect(id).toMatch(UUID_V7);
    expect(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(ms);
    expect(timeOrderedId(0).slice(0, 13)).toBe('00000000-0000');
  });

  it('sorts by time across milliseconds, and is unique within one', () => {
    const ids = [1, 2, 255, 256, 65_536, 2 ** 40, 2 ** 47].map((ms) => timeOrderedId(ms));
    expect([...ids].sort()).toEqual(ids);
    const same = Array.from({ length: 10_000 }, () => timeOrderedId(1_700_000_000_000));
    expect(new Set(same).size).toBe(same.length);
    for (const id of same) expect(id).toMatch(UUID_V7);
  });
});
