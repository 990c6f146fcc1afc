import { createTestApp } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';
import { fuzzTableGaps, routeCollector } from '../../../test/reliability/support/fuzz.ts';

// The reliability suite fuzzes every route from one table; a route without an entry would be
// fuzzed with empty bodies only, so a new route must come with its entry.
describe('the fuzz table of the reliability suite', () => {
  it('has an entry for every route of the app, and none for a route that is gone', async () => {
    const collector = routeCollector();
    const t = await createTestApp({ edge: { onRoute: collector.onRoute } });
    try {
      expect(collector.routes.length).toBeGreaterThan(25);
      expect(fuzzTableGaps(collector.routes)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
