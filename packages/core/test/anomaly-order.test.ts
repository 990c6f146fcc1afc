import { checksOptions, loadConfig } from '@vouch/config';
import {
  anomalyModelConstants,
  createAnomalyService,
  createEnrichService,
  createSanctionsService,
  createVerificationService,
  DEFAULT_ORGANIZATION,
} from '@vouch/core';
import type { Database } from '@vouch/db';
import { createScreenedDatabase, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

// On the bundled ETH list.
const LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
let database: Database;
const clock = { now: new Date('2026-11-20T12:00:00Z') };

beforeAll(async () => {
  database = await createScreenedDatabase(() => clock.now);
});
afterAll(() => database.close());

it('the latest anomaly check enrich reads is the one made last, not the one stored last', async () => {
  const options = checksOptions(loadConfig({}));
  const db = database.db;
  const sanctions = createSanctionsService({ db, clock: () => clock.now });
  const verification = createVerificationService({
    db,
    clock: () => clock.now,
    chain: null,
    thresholds: options.verification,
  });
  // The first check's screening is slow: it is stored after a check made two seconds later.
  let release = () => {};
  const slow = new Promise<void>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  const anomaly = createAnomalyService({
    db,
    clock: () => clock.now,
    sanctions: {
      ...sanctions,
      async forDecision(...args: Parameters<typeof sanctions.forDecision>) {
        if (++calls === 1) await slow;
        return sanctions.forDecision(...args);
      },
    },
    verification,
    thresholds: { ...anomalyModelConstants, ...options.anomaly },
  });
  const enrich = createEnrichService({ db, clock: () => clock.now, sanctions, verification, anomaly });
  const agent = randomAddress();
  const check = (counterparty?: string) =>
    anomaly.check({ agent, amount: '1', type: 0, counterparty, organizationId: DEFAULT_ORGANIZATION });

  const first = check(); // made at 12:00:00, waits on its screening
  await new Promise((resolve) => setTimeout(resolve, 200));
  clock.now = new Date(clock.now.getTime() + 2_000);
  const second = await check(LISTED); // made at 12:00:02, paying a listed address, stored first
  release();
  const late = await first; // stored after it
  expect(late.severity).toBe('LOW');
  expect(second.severity).toBe('CRITICAL');

  const enriched = await enrich.enrich(DEFAULT_ORGANIZATION, agent);
  expect(enriched.sources.latestAnomaly).toEqual({ severity: 'CRITICAL', riskScore: 20, at: second.checkedAt });
  expect(enriched.riskLevel).toBe('CRITICAL');
});
