import { createTestApp, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpClient, httpClient } from './support/http.ts';
import { idempotencyRace } from './support/money.ts';
import { report } from './support/report.ts';

// R2: 50 concurrent identical spends (and transaction records) with one Idempotency-Key,
// over 50 real connections; repeated with fresh keys to catch rare interleavings.
const REQUESTS = 50;
const ROUNDS = 10;

describe('R2 — one effect per Idempotency-Key under 50 concurrent duplicates', () => {
  let t: TestContext;
  let client: HttpClient;

  beforeAll(async () => {
    t = await createTestApp({ poolMax: 50 });
    client = httpClient(await t.app.listen({ port: 0, host: '127.0.0.1' }), { sockets: REQUESTS });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
  });

  it(`${ROUNDS} rounds: one ledger row each; the others replay or get 409; another body is 422`, async () => {
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      rounds.push(await idempotencyRace(t.app, t.database, client, { requests: REQUESTS }));
    }
    expect(rounds.every((r) => r.firsts === 1)).toBe(true);
    report('R2', {
      driver: t.database.driver,
      rounds: ROUNDS,
      requests: REQUESTS,
      replays: rounds.reduce((n, r) => n + r.replays, 0),
      inProgress409: rounds.reduce((n, r) => n + r.inProgress, 0),
    });
  });
});
