import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../scripts/build.ts';
import { bundleArgs } from './apps.ts';

const scripts: Record<string, string> = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts;

// Tests and the benchmark start the bundles with bundleArgs; users with these scripts. They must
// run the same process, or what is measured is not what is shipped. The shell that runs a script
// hands its place to node (`exec`): a SIGTERM npm passes on (docker stop's) then reaches the
// process, where the shell would die of it and leave the process running
// (apps/api/test/smoke.once.test.ts, "drains and stops the server when npm gets SIGTERM").
describe('the start scripts run the bundles as bundleArgs does', () => {
  it.each([
    ['start', 'api'],
    ['start:api', 'api'],
    ['start:worker', 'worker'],
  ] as const)('npm run %s', (script, app) => {
    const command = scripts[script];
    expect(command).toBeDefined();
    expect(command?.endsWith(` exec node ${bundleArgs(app).join(' ')}`)).toBe(true);
  });
});
