import { sql } from '@vouch/db';
import { createTestApp, post } from '@vouch/testkit';
import { describe, expect, it } from 'vitest';

// The replay answer's `complete` is documented as "false: more than 10,000 events of the range
// were to be sent; replay from `until`" (packages/schemas/src/events.ts, docs/events.md).
describe('a replay of exactly one call’s worth of events', () => {
  it('says it is complete, with the range’s own end as `until`', async () => {
    const ctx = await createTestApp({
      start: '2026-03-15T12:00:00Z',
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
      processors: (real) => ({ ...real, 'webhooks.deliver': async () => ({ status: 'pending', attempts: 0 }) }),
    });
    try {
      const res = await post(ctx.app, '/api/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['score.changed'],
      });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json().data.id as string;
      await sql`INSERT INTO events (organization_id, type, agent, data, created_at)
        SELECT 'default', 'score.changed', NULL, '{}', '2026-03-15T11:00:00.500Z'::timestamptz
        FROM generate_series(1, 10000)`.execute(ctx.database.db);
      const since = Date.parse('2026-03-15T10:00:00Z') / 1000;
      const r = await post(ctx.app, `/api/webhooks/${id}/replay`, { since, until: since + 7200 });
      expect(r.statusCode, r.body).toBe(202);
      expect(r.json().data).toEqual({ queued: 10_000, skipped: 0, complete: true, until: since + 7200 });
    } finally {
      await ctx.close();
    }
  });
});
