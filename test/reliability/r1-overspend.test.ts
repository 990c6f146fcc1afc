import { createTestApp, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpClient, httpClient } from './support/http.ts';
import { overspendRun } from './support/money.ts';
import { report } from './support/report.ts';

// R1: 1,000 spends over 100 connections on one budget that admits exactly 500, five times,
// against a real HTTP server whose pool lets 50 statements run at once.
const RUNS = 5;
const SPENDS = 1000;
const CONNECTIONS = 100;
const ADMITS = 500;

describe('R1 — no overspend under 100 concurrent connections', () => {
  let t: TestContext;
  let client: HttpClient;

  beforeAll(async () => {
    t = await createTestApp({ poolMax: 50 });
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = httpClient(address, { sockets: CONNECTIONS });
  });

  afterAll(async () => {
    client?.close();
    await t?.close();
  });

  for (let run = 1; run <= RUNS; run++) {
    it(`run ${run}/${RUNS}: exactly ${ADMITS} of ${SPENDS} accepted; spent == SUM(accepted ledger) == limit`, async () => {
      const figures = await overspendRun(t.app, t.database, client, {
        spends: SPENDS,
        connections: CONNECTIONS,
        admits: ADMITS,
        // A large amount, so the limit is far beyond 2^64: the arithmetic must be exact.
        amount: 10n ** 30n + BigInt(run),
      });
      expect(figures.accepted).toBe(ADMITS);
      report('R1', { run, driver: t.database.driver, ...figures });
    });
  }
});
