/**
 * Reads one variable of the process environment. The harness and its child scripts are
 * not turbo tasks, so their variables are read through this instead of being declared
 * in turbo.json.
 */
export function envVar(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}
