import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for this process. V8 watches how many
 * objects from each allocation site survive young-generation collections and, past a
 * threshold, allocates that site's objects straight in the old generation. The API's
 * request path shares allocation sites (zod parsing, routing, header handling) with
 * start-up work whose objects all survive, so those sites end up pretenured and every
 * request's short-lived objects go to the old generation, which only a full collection
 * frees: under steady load the old generation grew by ~30 MB/s and the peak RSS depended
 * on when V8 ran that collection. Without pretenuring they die young, as they should.
 * V8 reads the flag when it processes the feedback (at each collection), so setting it
 * at start-up covers the whole run. See docs/architecture.md ("Memory").
 */
export function disablePretenuring(): void {
  setFlagsFromString(NO_PRETENURING);
}

export const NO_PRETENURING = '--no-allocation-site-pretenuring';
