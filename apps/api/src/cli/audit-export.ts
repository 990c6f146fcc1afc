// `npm run audit:export -- --organization <id> > audit.jsonl`
// Writes an organization's audit chain, oldest first, one JSON object per line (the same lines as
// GET /api/audit/export): each line's hash is sha256(prevHash + "\n" + seq + "\n" + entry).
import { once } from 'node:events';
import { DEFAULT_ORGANIZATION, systemActor } from '@vouch/core';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { cliArgs } from './args.ts';

const { values } = cliArgs('audit:export', 'npm run audit:export [-- --organization <id>] > audit.jsonl', {
  options: { organization: { type: 'string', default: DEFAULT_ORGANIZATION } },
});

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
      // A reader that goes away (`| head`, a `| gzip` that fails) ends the export as a failure on
      // one line, exit 1: unheard, the pipe's EPIPE was an unhandled 'error' event (a stack trace).
      let failed: Error | null = null;
      process.stdout.on('error', (error) => {
        failed = error;
      });
      for await (const line of runtime.services.audit.exportLines(systemActor(), values.organization)) {
        if (failed) throw failed;
        if (!process.stdout.write(line)) await once(process.stdout, 'drain'); // rejects on 'error'
      }
      // The last lines are written (or not) before the export says it is done.
      await new Promise<void>((resolve, reject) =>
        process.stdout.write('', (error) => (error ? reject(failed ?? error) : resolve())),
      );
    }
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'audit:export', 'failed');
}
