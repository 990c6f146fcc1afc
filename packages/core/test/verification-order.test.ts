import { checksOptions, loadConfig } from '@vouch/config';
import { type ChainReader, createVerificationService } from '@vouch/core';
import type { Database } from '@vouch/db';
import { createScreenedDatabase, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

const DAY_MS = 86_400_000;
let database: Database;
const clock = { now: new Date('2026-11-20T12:00:00Z') };

beforeAll(async () => {
  database = await createScreenedDatabase(() => clock.now);
});
afterAll(() => database.close());

it('the newest verification of the history is the one the service reads as the latest', async () => {
  // A registered agent with an owner, old enough, no transactions, score below the minimum:
  // 4 checks pass without the chain (UNVERIFIED), 6 with it (PARTIALLY_VERIFIED).
  const owner = randomAddress();
  const address = randomAddress();
  const firstSeen = new Date(clock.now.getTime() - 10 * DAY_MS);
  await database.db
    .insertInto('agents')
    .values({
      address,
      is_registered: true,
      owner,
      owner_changed_at: null,
      metadata: null,
      score: 10,
      first_seen_at: firstSeen,
      registered_at: firstSeen,
      updated_at: firstSeen,
    })
    .execute();

  // The node is slow for the first verification (it ends up not answering) and answers the second at once.
  let release = () => {};
  const slow = new Promise<void>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  const chain: Pick<ChainReader, 'hasCode' | 'owner'> = {
    async hasCode() {
      if (++calls === 1) {
        await slow;
        return { ok: false, reason: 'timed out', unreachable: true };
      }
      return { ok: true, value: true };
    },
    async owner() {
      return calls === 1 ? { ok: false, reason: 'timed out', unreachable: true } : { ok: true, value: owner };
    },
  };
  const service = createVerificationService({
    db: database.db,
    clock: () => clock.now,
    chain,
    thresholds: checksOptions(loadConfig({})).verification,
  });

  const first = service.verify(address); // asked at 12:00:00, waits on the node
  await new Promise((resolve) => setTimeout(resolve, 200));
  clock.now = new Date(clock.now.getTime() + 2_000);
  const second = await service.verify(address); // asked at 12:00:02, stored first
  release();
  const late = await first; // stored after it
  expect(second.status).toBe('PARTIALLY_VERIFIED');
  expect(late.status).toBe('UNVERIFIED');

  const history = await service.list(address);
  const latest = await service.latest(address);
  // GET /api/agents/:address/verifications (newest first) and what enrich and the anomaly check
  // read as "the latest verification" must name the same one.
  expect(history[0]?.status).toBe(latest?.status);
});
