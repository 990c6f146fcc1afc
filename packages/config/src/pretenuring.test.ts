import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NO_PRETENURING } from './pretenuring.ts';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./pretenuring.fixture.mjs', import.meta.url));

// V8 pretenures a site only at a scavenge that finds the new space at its maximum size. Left to
// grow, this short program's new space gets there after the loop is optimized, and from Node 22 the
// optimized code leaves no allocation mementos, so V8 never decides (a long-running API does get
// there). A new space capped at 1 MB is at its maximum from the first scavenge, on 22 as on 24.
const SMALL_NEW_SPACE = '--max-semi-space-size=1';

async function oldGrowth(flags: string[]): Promise<number> {
  // Plain node: no loader hooks from this process's options.
  const { stdout } = await run(process.execPath, [SMALL_NEW_SPACE, fixture, ...flags], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return (JSON.parse(stdout) as { oldGrowthMB: number }).oldGrowthMB;
}

describe('the flag disablePretenuring sets', () => {
  it('keeps short-lived objects of a once long-lived allocation site out of the old generation', async () => {
    // Same program, same Node, same heap; only the flag differs.
    const [pretenured, disabled] = await Promise.all([oldGrowth([]), oldGrowth([NO_PRETENURING])]);
    expect(pretenured).toBeGreaterThan(50);
    expect(disabled).toBeLessThan(pretenured / 4);
  });
});
