import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NO_PRETENURING } from './pretenuring.ts';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./pretenuring.fixture.mjs', import.meta.url));

async function oldGrowth(flags: string[]): Promise<number> {
  // Plain node: no loader hooks from this process's options.
  const { stdout } = await run(process.execPath, [fixture, ...flags], { env: { ...process.env, NODE_OPTIONS: '' } });
  return (JSON.parse(stdout) as { oldGrowthMB: number }).oldGrowthMB;
}

describe('the flag disablePretenuring sets', () => {
  it('keeps short-lived objects of a once long-lived allocation site out of the old generation', async () => {
    // Same program, same Node; only the flag differs.
    const [pretenured, disabled] = await Promise.all([oldGrowth([]), oldGrowth([NO_PRETENURING])]);
    expect(pretenured).toBeGreaterThan(50);
    expect(disabled).toBeLessThan(pretenured / 4);
  });
});
