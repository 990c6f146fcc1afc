// `npm run sanctions:restore [-- --force]`
// Makes the OFAC lists shipped with Vouch (data/sanctions) the active snapshot again, for when
// the active list is missing or a bad import must be undone. Like an import, it refuses to
// replace a list more than twice its size unless --force is given.
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { cliArgs } from './args.ts';
import { printImportResult } from './sanctions-result.ts';

const { values } = cliArgs('sanctions:restore', 'npm run sanctions:restore [-- --force]', {
  options: { force: { type: 'boolean', default: false } },
});

try {
  const runtime = await createRuntime(loadConfig(), {
    role: 'cli',
    logger: pino({ level: 'warn' }),
    migrate: true,
    loadSanctions: false,
  });
  try {
    const result = await runtime.services.sanctions.restoreBundled({ force: values.force });
    printImportResult('sanctions:restore', result);
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'sanctions:restore', 'failed');
}
