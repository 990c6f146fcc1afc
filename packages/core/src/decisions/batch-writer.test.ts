import { describe, expect, it } from 'vitest';
import { batchWriter } from './decisions.service.ts';

describe('batchWriter', () => {
  it('writes the first row at once and the rows that arrive meanwhile together', async () => {
    const statements: number[][] = [];
    let release: () => void = () => {};
    const writer = batchWriter<number>(
      async (rows) => {
        statements.push(rows);
        if (statements.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
      { inFlight: 1 },
    );
    const first = writer.write(1);
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [2, 3, 4].map((n) => writer.write(n));
    release();
    await Promise.all([first, ...rest]);
    expect(statements).toEqual([[1], [2, 3, 4]]);
  });

  it('answers each write only once its statement committed, and retries a failed batch row by row', async () => {
    const written: number[] = [];
    const writer = batchWriter<number>(async (rows) => {
      if (rows.length > 1 || rows[0] === 13) throw new Error('check constraint');
      written.push(...rows);
    });
    const results = await Promise.allSettled([11, 12, 13, 14].map((n) => writer.write(n)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(written.sort()).toEqual([11, 12, 14]);
  });

  it.each([
    ['away', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
    ['busy', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })],
  ])('fails every write of a batch at once when the database is %s', async (_, failure) => {
    let calls = 0;
    const writer = batchWriter<number>(async () => {
      calls++;
      throw failure;
    });
    const results = await Promise.allSettled([1, 2, 3].map((n) => writer.write(n)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(calls).toBe(1);
  });
});
