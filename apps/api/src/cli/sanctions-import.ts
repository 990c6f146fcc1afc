// `npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD] [--force]`
// Imports OFAC's advanced XML as a new snapshot and makes it the active one. Screening
// reads the active snapshot from the database, so running services use it at once.
// Prints what was added and removed and the registered agents whose status changed. A list that
// names no address is refused, and one under half the active list's size unless --force.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { printImportResult } from './sanctions-result.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { date: { type: 'string' }, force: { type: 'boolean', default: false } },
});
const file = positionals[0];
/** A calendar date YYYY-MM-DD that exists (not empty, not 2026-02-30). */
const isDate = (d: string) => {
  const t = Date.parse(`${d}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(t) && new Date(t).toISOString().startsWith(d);
};
if (!file || (values.date !== undefined && !isDate(values.date))) {
  console.error('usage: npm run sanctions:import -- <sdn_advanced.xml> [--date YYYY-MM-DD] [--force]');
  process.exit(2);
}

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
