// `npm run audit:verify [-- --organization <id>]`
// Walks every organization's audit chain (or one): each entry's number, previous hash, hash and
// columns, and the head that records the last entry. Prints what it checked; exits 1 at any break.
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { cliArgs } from './args.ts';

const { values } = cliArgs('audit:verify', 'npm run audit:verify [-- --organization <id>]', {
  options: { organization: { type: 'string' } },
});

try {
  const runtime = await createRuntime(loadConfig(), {
    role: 'cli',
    logger: pino({ level: 'warn' }),
    loadSanctions: false,
  });
  let intact = false;
  try {
    const result = await runtime.services.audit.verify(values.organization);
    if (values.organization !== undefined && result.organizations === 0) {
      // A mistyped name checks nothing: not "intact".
      process.stderr.write(`audit:verify: no organization ${values.organization}\n`);
    } else {
      intact = result.broken.length === 0;
      for (const b of result.broken) {
        process.stderr.write(`audit:verify: organization ${b.organizationId}, entry ${b.seq}: ${b.problem}\n`);
      }
      console.log(
        `${intact ? 'intact' : 'BROKEN'}: ${result.entries} entries in ${result.organizations} organization(s)` +
          (intact ? '' : `, ${result.broken.length} chain(s) broken`),
      );
    }
  } finally {
    await runtime.close();
  }
  process.exitCode = intact ? 0 : 1;
} catch (error) {
  exitOnStartupFailure(error, 'audit:verify', 'failed');
}
