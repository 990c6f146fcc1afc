import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../scripts/build.ts';
import { bundleArgs } from './apps.ts';

const scripts: Record<string, string> = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts;

// Tests and the benchmark start the bundles with bundleArgs; users with these scripts. They must
// run the same process, or what is measured is not what is shipped.
describe('the start scripts run the bundles as bundleArgs does', () => {
  it.each([
    ['start', 'api'],
    ['start:api', 'api'],
    ['start:worker', 'worker'],
  ] as const)('npm run %s', (script, app) => {
    const command = scripts[script];
    expect(command).toBeDefined();
    expect(command?.endsWith(` node ${bundleArgs(app).join(' ')}`)).toBe(true);
  });
});
