/**
 * Reads one variable of the process environment. The harness and its child scripts are
 * not turbo tasks, so their variables are read through this instead of being declared
 * in turbo.json.
 */
export function envVar(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * A whole-number setting of the environment, at least `min`, or `fallback` when unset. A value
 * that is not one stops the run with the variable's name instead of reaching a child as NaN.
 */
export function wholeNumberVar(name: string, fallback: number, min: number): number {
  const raw = envVar(name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number ≥ ${min}, got ${raw}`);
  return n;
}
