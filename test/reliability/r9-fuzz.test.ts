import { systemActor } from '@vouch/core';
import type { TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FuzzFixtures, type FuzzRoute, fuzzRoutes, fuzzTableGaps, fuzzTarget } from './support/fuzz.ts';
import { report } from './support/report.ts';

// R9: property-based hostile input to every route of the app (fast-check): params, query,
// bodies, headers and content types. Never a 5xx, never a hang, and a refused request
// changes nothing (a digest of every table is compared before and after).
const RUNS = Number(process.env.R9_RUNS ?? 4000);
const ADMIN = 'r9-admin-secret-0123456789';

describe('R9 — hostile input never yields a 5xx, a hang or a change from a refusal', () => {
  let t: TestContext;
  let routes: FuzzRoute[];
  let fixtures: FuzzFixtures;

  beforeAll(async () => {
    const target = await fuzzTarget(ADMIN);
    t = target.t;
    routes = target.routes;
    const { agent } = target.fixtures;
    const admin = { authorization: `Bearer ${ADMIN}` };
    const job = await t.services.scoring.recompute(systemActor(), { agents: [agent] });
    const key = await t.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'fuzz', scopes: ['read'] },
      headers: admin,
    });
    expect([job?.state, key.statusCode]).toEqual(['completed', 201]);
    fixtures = { ...target.fixtures, keyId: key.json().data.id, jobId: job?.jobId };
  });

  afterAll(() => t?.close());

  it(`${RUNS} generated requests over every route`, async () => {
    expect(routes.length).toBeGreaterThan(25);
    expect(fuzzTableGaps(routes)).toEqual([]);
    const figures = await fuzzRoutes(t.app, t.database, routes, fixtures, {
      runs: RUNS,
      ...(process.env.R9_SEED && { seed: Number(process.env.R9_SEED) }),
    });
    report('R9', { driver: t.database.driver, ...figures });
    // Every route was reached, and the generator produced accepted requests as well as refusals.
    expect(figures.routesHit).toBe(figures.routes);
    expect(Object.keys(figures.byStatus).some((s) => s.startsWith('2'))).toBe(true);
  });
});
