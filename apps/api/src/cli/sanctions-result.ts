import type { ImportResult } from '@vouch/core';

/**
 * Prints what a sanctions import or restore did. A re-scoring that failed leaves the list active
 * and the agents it changed with their old scores until the owed re-scoring runs (the next start or
 * import): said on stderr, and the command exits 1.
 */
export function printImportResult(command: string, result: ImportResult): void {
  console.log(JSON.stringify(result, null, 2));
  if (result.rescoreOwed === null) return;
  console.error(
    `${command}: the list is active, but re-scoring its agents failed (${result.rescoreOwed}); the next start or import does it`,
  );
  process.exitCode = 1;
}
