// `npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD]`
// Imports OFAC's advanced XML as a new snapshot and makes it the active one. Screening
// reads the active snapshot from the database, so running services use it at once.
// Prints what was added and removed and the registered agents whose status changed.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { date: { type: 'string' } } });
const file = positionals[0];
if (!file || (values.date && !/^\d{4}-\d{2}-\d{2}$/.test(values.date))) {
  console.error('usage: npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD]');
  process.exit(2);
}

try {
  const runtime = await createRuntime(loadConfig(), { role: 'cli', logger: pino({ level: 'warn' }), migrate: true });
  try {
    const result = await runtime.services.sanctions.importXml(await readFile(file, 'utf8'), values.date);
    if (result.entries === 0) console.error('warning: the file names no EVM digital-currency address');
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'sanctions:import');
}
