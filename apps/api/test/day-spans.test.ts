import { successEnvelope, verificationResult } from '@vouch/schemas';
import { createAgent, createTestApp, post, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The longest spans of days the configuration takes (docs: at most 100,000) reach back to a
// date the database stores: a verification's activity window and the purge of old events.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({
    jobs: 'in-process',
    env: { VERIFY_ACTIVITY_WINDOW_DAYS: '100000', EVENTS_RETENTION_DAYS: '100000' },
  });
});
afterAll(() => t.close());

describe('the longest spans of days the configuration takes', () => {
  it('verify an agent over its whole activity window', async () => {
    const address = await createAgent(t.app);
    const res = await post(t.app, '/api/verify', { address });
    expect(res.statusCode, res.body).toBe(200);
    const result = successEnvelope(verificationResult).parse(res.json()).data;
    expect(result.checkDetails.activityLevel).toMatch(/in the last 100000 days/);
  });

  it('purge events older than the retention', async () => {
    await expect(t.services.events.purge()).resolves.toBe(0);
  });
});
