import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { applyHeapGrowth, sharedEnv } from './index.ts';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./heap.fixture.ts', import.meta.url));

async function peakWith(percent: number): Promise<number> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture, String(percent)]);
  return (JSON.parse(stdout) as { peakMB: number }).peakMB;
}

describe('HEAP_GROWTH_PERCENT', () => {
  it('defaults to 50 and accepts 0 (V8 decides)', () => {
    expect(sharedEnv.HEAP_GROWTH_PERCENT.parse(undefined)).toBe(50);
    expect(sharedEnv.HEAP_GROWTH_PERCENT.parse('0')).toBe(0);
    expect(sharedEnv.HEAP_GROWTH_PERCENT.safeParse('-1').success).toBe(false);
    expect(sharedEnv.HEAP_GROWTH_PERCENT.safeParse('lots').success).toBe(false);
    expect(() => applyHeapGrowth(-5)).toThrow(RangeError);
  });

  it('keeps promoted garbage from piling up: a lower peak heap than V8 left alone', async () => {
    // Same allocation pattern, same Node; only the growth setting differs.
    const [unbounded, bounded] = await Promise.all([peakWith(0), peakWith(50)]);
    expect(bounded).toBeLessThan(unbounded * 0.9);
  });
});
