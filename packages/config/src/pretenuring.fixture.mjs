/**
 * Run by pretenuring.test.ts with plain node (a module loader such as tsx changes V8's
 * pretenuring decisions) and a 1 MB new space (why: see there), with the V8 flags to set
 * as arguments (none: V8's defaults).
 * One allocation site first makes objects that all survive, then objects that die at
 * once; prints how far the old generation grew during the second phase, in MB.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

for (const flag of process.argv.slice(2)) setFlagsFromString(flag);
function make(n) {
  return { n, s: 'x', a: [n] };
}
const kept = [];
for (let i = 0; i < 400_000; i++) kept.push(make(i));
const old = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;
const ring = new Array(64);
const before = old();
let peak = before;
for (let i = 0; i < 5_000_000; i++) {
  ring[i & 63] = make(i);
  if (i % 10_000 === 0) peak = Math.max(peak, old());
}
console.log(JSON.stringify({ oldGrowthMB: (peak - before) / 2 ** 20, kept: kept.length }));
