import { createAgent, createTestApp, get, post, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// A batch answered 200 by this process is seen by this process's next score read, as a score
// set by hand is (read-your-writes.test.ts), whatever the read cache holds.
const ROUNDS = 1_000;

describe.runIf(inject('testDbMode') === 'postgres')('batch scores through the read cache', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ cache: true, poolMax: 4, jobs: 'in-process' });
  });
  afterAll(() => t?.close());

  it(`sees each batch's score in the next read, ${ROUNDS} times`, async () => {
    const agent = await createAgent(t.app);
    let stale = 0;
    for (let i = 1; i <= ROUNDS; i++) {
      const score = i % 1000;
      const res = await post(t.app, '/api/agents/batch-scores', { agents: [agent], scores: [score], reasons: ['0x'] });
      expect(res.statusCode).toBe(200);
      if ((await get(t.app, `/api/agents/${agent}/score`)).json().data.score !== score) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);

  it(`sees each recomputed score in the next read, 300 times`, async () => {
    const agent = await createAgent(t.app);
    let stale = 0;
    for (let i = 1; i <= 300; i++) {
      expect((await post(t.app, `/api/agents/${agent}/score`, { score: 500, reason: '0x' })).statusCode).toBe(200);
      expect((await get(t.app, `/api/agents/${agent}/score`)).json().data.score).toBe(500);
      // The model gives an agent with no transactions and no age 0.
      expect((await post(t.app, '/api/scores/recompute', { agents: [agent] })).statusCode).toBe(200);
      if ((await get(t.app, `/api/agents/${agent}/score`)).json().data.score !== 0) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);
});
