/**
 * Run by heap.test.ts in a child process: applies the given heap growth, keeps ~30 MB
 * live, then churns objects that live long enough to be promoted before they die.
 * Prints the peak of the used heap in MB.
 */
import { getHeapStatistics } from 'node:v8';
import { applyHeapGrowth } from './heap.ts';

applyHeapGrowth(Number(process.argv[2]));
const live = Array.from({ length: 300_000 }, (_, i) => ({ i, s: `live-${i}` }));
const ring: unknown[] = new Array(50_000);
let peak = 0;
for (let n = 0; n < 3_000_000; n++) {
  ring[n % ring.length] = { n, s: `x${n}`, a: [n, n + 1] };
  if (n % 10_000 === 0) peak = Math.max(peak, getHeapStatistics().used_heap_size);
}
console.log(JSON.stringify({ peakMB: peak / 2 ** 20, live: live.length }));
