import { type Event, eventCatalogue } from '@vouch/schemas';
import { createAgentWithBudget, createTestApp, get, listAllEvents, post, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A clock in the second half of a second: the hold is made between two whole seconds.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-03-15T12:00:00.700Z' });
});
afterAll(() => t.close());

const ofAgent = (agent: string) => listAllEvents(t.app, t.database, `&agent=${agent}`);

describe('the times an event of a hold carries', () => {
  it('are the hold’s own expiresAt, as GET of the hold answers it (unix seconds)', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '100000' });
    const placed = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '10', expiresIn: 600 });
    expect(placed.statusCode, placed.body).toBe(201);
    const id = placed.json().data.authorizationId as string;
    const hold = (await get(t.app, `/api/budgets/${agent}/authorizations/${id}`)).json().data;
    // Made at 12:00:00.700 for 600 s: it expires on the whole second after, 12:10:01.
    expect(hold.expiresAt).toBe(Date.parse('2026-03-15T12:10:01Z') / 1000);

    t.clock.advance(601_000);
    try {
      expect((await t.services.authorizations.expireDue()).map((h) => String(h.id))).toContain(id);
    } finally {
      t.clock.advance(-601_000);
    }

    const events = await ofAgent(agent);
    for (const e of events) eventCatalogue[e.type].data.parse(e.data);
    const created = events.find((e) => e.type === 'authorization.created') as Event;
    const expired = events.find((e) => e.type === 'authorization.expired') as Event;
    expect({ created: created.data.expiresAt, expired: expired.data.expiresAt }).toEqual({
      created: hold.expiresAt,
      expired: hold.expiresAt,
    });
  });
});
