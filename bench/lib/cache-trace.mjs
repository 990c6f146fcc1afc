// Loaded into an API process by X-cache-staleness (NODE_OPTIONS=--import=<this file>): records
// each drop of the read cache (the `vouch:cache:invalidate` diagnostics channel, published by
// packages/core/src/cache/read-cache.ts) with the time it happened on the machine's monotonic
// clock, which every process on the machine shares, and appends the records to
// VOUCH_BENCH_CACHE_TRACE: `<ns> <source> <space> <key>` per line.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

// Named by bench/lib/context.ts, which sets it together with NODE_OPTIONS.
const TRACE_VARIABLE = 'VOUCH_BENCH_CACHE_TRACE';
const file = process.env[TRACE_VARIABLE];
if (file) {
  let lines = [];
  subscribe('vouch:cache:invalidate', (message) => {
    // The clock first: the drop has just happened (publishing is synchronous, right after it).
    const at = process.hrtime.bigint();
    lines.push(`${at} ${message.source} ${message.space} ${message.key}\n`);
  });
  const flush = () => {
    if (!lines.length) return;
    const text = lines.join('');
    lines = [];
    appendFileSync(file, text);
  };
  setInterval(flush, 200).unref();
  process.on('exit', flush);
}
