// `npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD] [--force]`
// Imports OFAC's advanced XML as a new snapshot and makes it the active one. Screening
// reads the active snapshot from the database, so running services use it at once.
// Prints what was added and removed and the registered agents whose status changed. A list that
// names no address is refused, and one under half the active list's size unless --force.
import { readFile } from 'node:fs/promises';
import { isCalendarDate } from '@vouch/core';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { cliArgs, usageExit } from './args.ts';
import { printImportResult } from './sanctions-result.ts';

const USAGE = 'npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD] [--force]';
const { values, positionals } = cliArgs('sanctions:import', USAGE, {
  allowPositionals: true,
  options: { date: { type: 'string' }, force: { type: 'boolean', default: false } },
});
const file = positionals[0];
if (!file || (values.date !== undefined && !isCalendarDate(values.date))) usageExit('sanctions:import', USAGE);
// One file: a second one would not be read, and a date without its --date not taken.
if (positionals.length > 1) usageExit('sanctions:import', USAGE, `unexpected argument '${positionals[1]}'`);

try {
  const runtime = await createRuntime(loadConfig(), { role: 'cli', logger: pino({ level: 'warn' }), migrate: true });
  try {
    const result = await runtime.services.sanctions.importXml(await readFile(file, 'utf8'), values.date, {
      force: values.force,
    });
    printImportResult('sanctions:import', result);
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'sanctions:import', 'failed');
}
