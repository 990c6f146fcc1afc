import { setFlagsFromString } from 'node:v8';

/**
 * Bounds how far V8 lets the old generation grow over the live heap before its next
 * full collection: growth factor 1 + percent/100. V8's own heuristic allows up to 4×
 * when collections are cheap, so under steady load a process holding ~45 MB of live
 * objects let promoted garbage pile up to ~180 MB before collecting it. The factor is
 * read whenever V8 sets the next limit, so setting it at start-up takes effect for the
 * whole run. 0 leaves V8's heuristic alone. See docs/architecture.md ("Memory").
 */
export function applyHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0)
    throw new RangeError(`heap growth must be an integer ≥ 0, not ${percent}`);
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
