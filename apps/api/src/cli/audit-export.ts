// `npm run audit:export -- --organization <id> > audit.jsonl`
// Writes an organization's audit chain, oldest first, one JSON object per line (the same lines as
// GET /api/audit/export): each line's hash is sha256(prevHash + "\n" + seq + "\n" + entry).
import { parseArgs } from 'node:util';
import { DEFAULT_ORGANIZATION, systemActor } from '@vouch/core';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';

const { values } = parseArgs({ options: { organization: { type: 'string', default: DEFAULT_ORGANIZATION } } });

try {
  const runtime = await createRuntime(loadConfig(), {
    role: 'cli',
    logger: pino({ level: 'warn' }),
    loadSanctions: false,
  });
  try {
    if (!(await runtime.services.organizations.exists(values.organization))) {
      process.stderr.write(`audit:export: no organization ${values.organization}\n`);
      process.exitCode = 1;
    } else {
      for await (const line of runtime.services.audit.exportLines(systemActor(), values.organization)) {
        if (!process.stdout.write(line)) await new Promise((resolve) => process.stdout.once('drain', resolve));
      }
    }
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'audit:export', 'failed');
}
