import { readFileSync } from 'node:fs';
import { createSanctionsService } from '@vouch/core';
import { anomalyResult, enrichResult, screeningResult, successEnvelope, verificationResult } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  createTestRuntime,
  get,
  post,
  randomAddress,
  randomTxHash,
  recordTx,
  type TestContext,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Listed on the bundled ETH list (EIP-55 mixed case as published), and one only on the USDT list.
const ETH_LISTED = '0x098B716B8Aaf21512996dC57EB0615e2383E2f96';
const USDT_ONLY = '0x175d44451403edf28469df03a9280c1197adb92c';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ jobs: 'in-process', refreshDelayMs: 60_000 });
});
afterAll(() => t.close());

const screen = async (address: string) =>
  successEnvelope(screeningResult).parse((await post(t.app, '/api/verify/sanctions', { address })).json()).data;

describe('POST /api/verify/sanctions', () => {
  it('reports a listed address with its lists and the snapshot it screened against', async () => {
    const result = await screen(ETH_LISTED);
    expect(result).toMatchObject({
      address: ETH_LISTED.toLowerCase(),
      sanctioned: true,
      matchedLists: ['ETH'],
      source: { name: expect.stringContaining('OFAC SDN'), snapshotDate: '2024-09-27', entries: 156 },
    });
    expect(result.checkedAt).toBe(Math.floor(t.clock.now.getTime() / 1000));
  });

  it('matches the USDT-only addresses and any letter case', async () => {
    expect(await screen(USDT_ONLY)).toMatchObject({ sanctioned: true, matchedLists: ['USDT'] });
    expect(await screen(ETH_LISTED.toLowerCase())).toMatchObject({ sanctioned: true });
    expect(await screen(`0x${ETH_LISTED.slice(2).toUpperCase()}`)).toMatchObject({ sanctioned: true });
  });

  it('clears an address that is not listed, and keeps every screening', async () => {
    const clean = randomAddress();
    expect(await screen(clean)).toMatchObject({ sanctioned: false, matchedLists: [] });
    const rows = await t.database.db
      .selectFrom('sanctions_screenings')
      .selectAll()
      .where('address', '=', clean)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('refuses malformed addresses', async () => {
    for (const address of ['0x123', ETH_LISTED.replace('B', 'b'), 42]) {
      expect((await post(t.app, '/api/verify/sanctions', { address })).statusCode).toBe(400);
    }
  });
});

describe('a sanctioned agent is reported everywhere', () => {
  it('verify, enrich, anomaly check and score all reflect it', async () => {
    await createAgent(t.app, { address: ETH_LISTED.toLowerCase() });
    const address = ETH_LISTED.toLowerCase();
    const scored = await post(t.app, `/api/agents/${address}/score`, { score: 900, reason: '0x' });
    expect(scored.json().data.score).toBe(0);
    expect((await get(t.app, `/api/agents/${address}/score`)).json().data.score).toBe(0);
    await recordTx(t.app, address, { amount: (10n ** 18n).toString() });
    expect((await get(t.app, `/api/scores/${address}`)).json().data.score).toBe(0);

    const verification = successEnvelope(verificationResult).parse(
      (await post(t.app, '/api/verify', { address })).json(),
    ).data;
    expect(verification.checks.sanctionsScreening).toBe(false);
    expect(verification.checkDetails.sanctionsScreening).toContain('OFAC SDN list (ETH)');

    const enriched = successEnvelope(enrichResult).parse(
      (await post(t.app, '/api/scores/enrich', { agent: address })).json(),
    ).data;
    expect(enriched).toMatchObject({ sanctionsClean: false, apiReputationScore: 0, riskLevel: 'CRITICAL' });

    const anomaly = (await post(t.app, '/api/scores/anomaly-check', { agent: address, amount: '1', type: 0 })).json()
      .data;
    expect(anomaly).toMatchObject({ anomalyDetected: true, severity: 'CRITICAL' });
  });

  it('a registered agent paying a sanctioned counterparty is flagged', async () => {
    const agent = await createAgent(t.app);
    const res = await post(t.app, '/api/scores/anomaly-check', {
      agent,
      amount: '5',
      txType: 'PAYMENT',
      counterparty: USDT_ONLY,
    });
    expect(res.json().data.flags.map((f: { code: string }) => f.code)).toContain('SANCTIONED_COUNTERPARTY');
  });

  it('an agent whose owner is listed is flagged and not clean, as a decision screens it', async () => {
    const agent = await createAgent(t.app, { owner: ETH_LISTED.toLowerCase() });
    const anomaly = successEnvelope(anomalyResult).parse(
      (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1', type: 0 })).json(),
    ).data;
    expect(anomaly).toMatchObject({ anomalyDetected: true, severity: 'CRITICAL' });
    expect(anomaly.flags.map((f) => f.code)).toContain('SANCTIONED_OWNER');
    const enriched = successEnvelope(enrichResult).parse(
      (await post(t.app, '/api/scores/enrich', { agent })).json(),
    ).data;
    expect(enriched).toMatchObject({ sanctionsClean: false, riskLevel: 'CRITICAL', riskReason: 'owner sanctioned' });
  });

  it('with no sanctions list nobody is clean: the anomaly check and enrich say so and fail closed', async () => {
    const agent = await createAgent(t.app);
    const [anomaly, enriched] = await withoutSanctionsList(t.database.db, async () => [
      successEnvelope(anomalyResult).parse(
        (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1', type: 0 })).json(),
      ).data,
      successEnvelope(enrichResult).parse((await post(t.app, '/api/scores/enrich', { agent })).json()).data,
    ]);
    expect(anomaly).toMatchObject({ anomalyDetected: true, severity: 'CRITICAL' });
    expect(anomaly.flags.map((f) => f.code)).toContain('SANCTIONS_LIST_UNAVAILABLE');
    expect(enriched).toMatchObject({
      sanctionsClean: false,
      riskLevel: 'CRITICAL',
      riskReason: 'no sanctions list: not screened',
    });
  });
});

describe('POST /api/verify', () => {
  it('unknown clean address: only the vacuous checks pass → UNVERIFIED; chain checks did not run, saying why', async () => {
    const result = successEnvelope(verificationResult).parse(
      (await post(t.app, '/api/verify', { address: randomAddress() })).json(),
    ).data;
    expect(result).toMatchObject({ status: 'UNVERIFIED', passed: 2, total: 7, notRun: 1, score: 0, grade: 'D' });
    expect(result.checks).toMatchObject({ ownershipStability: true, sanctionsScreening: true, registration: false });
    expect(result.checkDetails.contractExists).toContain('no chain configured');
    // Could not check is not failed: the boolean map says false, the state says not run.
    expect(result.checks.contractExists).toBe(false);
    expect(result.checkStates).toMatchObject({
      contractExists: 'not_run',
      ownerConsistency: 'failed', // no owner registered: that is a failure whatever the chain
      registration: 'failed',
      sanctionsScreening: 'passed',
    });
    expect(result.statusDetail).toBe('UNVERIFIED: 2 of the 7 checks that ran passed; not run: contractExists');
  });

  it('unknown sanctioned address → SUSPICIOUS', async () => {
    const result = (await post(t.app, '/api/verify', { address: USDT_ONLY })).json().data;
    expect(result).toMatchObject({ status: 'SUSPICIOUS', passed: 1 });
  });

  it('a registered, active agent without a chain reaches PARTIALLY_VERIFIED; stored results list newest first', async () => {
    const agent = await createAgent(t.app, { owner: randomAddress() });
    await post(t.app, `/api/agents/${agent}/score`, { score: 400, reason: '0x' });
    await recordTx(t.app, agent);
    t.clock.advance(2 * 86_400_000);
    const first = (await post(t.app, '/api/verify', { address: agent })).json().data;
    expect(first).toMatchObject({ status: 'PARTIALLY_VERIFIED', passed: 6 });
    expect(first.checks).toMatchObject({
      contractExists: false,
      ownerConsistency: false,
      accountAge: true,
      activityLevel: true,
    });

    // An owner change within 7 days costs ownershipStability.
    const changed = await post(t.app, `/api/agents/${agent}/owner`, { owner: randomAddress() });
    expect(changed.json().data.ownerChangedAt).toBe(Math.floor(t.clock.now.getTime() / 1000));
    t.clock.advance(1000);
    const second = (await post(t.app, '/api/verify', { address: agent })).json().data;
    expect(second).toMatchObject({ passed: 5, checks: { ownershipStability: false } });

    const list = (await get(t.app, `/api/agents/${agent}/verifications`)).json().data.verifications;
    expect(list.map((v: { passed: number }) => v.passed)).toEqual([5, 6]);
  });
});

describe('POST /api/scores/anomaly-check', () => {
  it('flags a large value against the agent’s own history and stores the check', async () => {
    const agent = await createAgent(t.app);
    // Six transactions over the two hours before the last: as frequent as this one, so that only its value stands out.
    for (let i = 0; i < 6; i++)
      await recordTx(t.app, agent, {
        amount: '1000',
        timestamp: Math.floor(t.clock.now.getTime() / 1000) - 3_700 - 600 * i,
      });
    const res = await post(t.app, '/api/scores/anomaly-check', {
      agent,
      amount: '50000',
      type: 1,
      txHash: `0x${'ab'.repeat(32)}`,
    });
    expect(res.statusCode).toBe(200);
    const data = successEnvelope(anomalyResult).parse(res.json()).data;
    expect(data.flags.map((f) => f.code)).toEqual(['LARGE_VALUE']);
    expect(data.factors.largeValue).toMatchObject({ value: 50, risk: 1 });
    expect(data.riskScore).toBe(25);
    const stored = await t.database.db.selectFrom('anomaly_checks').selectAll().where('agent', '=', agent).execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ risk_score: 25, severity: 'MEDIUM', type: 1, amount: '50000', asset: '' });
  });

  it('judges an amount against the history in its own asset, and stores the check as the caller’s', async () => {
    const agent = await createAgent(t.app);
    const usdc = 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
    for (let i = 0; i < 6; i++) {
      const timestamp = Math.floor(t.clock.now.getTime() / 1000) - 3_700 - 600 * i;
      // A wei amount far above any USDC one, and USDC amounts of 1 USDC each.
      await recordTx(t.app, agent, { amount: '1000000000000000000', timestamp });
      const usdcTx = await post(t.app, '/api/transactions/record', {
        agent,
        txHash: randomTxHash(),
        amount: '1000000',
        type: 0,
        asset: usdc,
        timestamp,
      });
      expect(usdcTx.statusCode, usdcTx.body).toBe(201);
    }
    const check = async (asset?: string) =>
      successEnvelope(anomalyResult).parse(
        (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '50000000', type: 0, asset })).json(),
      ).data;
    // 50 USDC is 50× the USDC average; as wei it is a speck of the wei average.
    expect((await check(usdc)).flags.map((f) => f.code)).toEqual(['LARGE_VALUE']);
    expect((await check()).flags).toEqual([]);
    expect(
      (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1', type: 0, asset: 'usdc' })).statusCode,
    ).toBe(400);
    const stored = await t.database.db
      .selectFrom('anomaly_checks')
      .select(['organization_id', 'amount', 'asset'])
      .where('agent', '=', agent)
      .orderBy('id')
      .execute();
    // Each amount with the asset it is in.
    expect(stored).toEqual([
      { organization_id: 'default', amount: '50000000', asset: usdc },
      { organization_id: 'default', amount: '50000000', asset: '' },
    ]);
  });

  it('takes the hourly average over a history recorded from before the agent was first seen', async () => {
    // First seen now, with a month of one transaction a day recorded after the fact, then a burst.
    const agent = await createAgent(t.app);
    const now = Math.floor(t.clock.now.getTime() / 1000);
    for (let i = 0; i < 29; i++) await recordTx(t.app, agent, { timestamp: now - 86_400 * (i + 1) });
    for (let i = 0; i < 10; i++) await recordTx(t.app, agent, { timestamp: now - 60 * (i + 1) });
    const checked = successEnvelope(anomalyResult).parse(
      (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1000', type: 0 })).json(),
    ).data;
    // 11 this hour against 39 over 29 days (an average under one an hour, taken as one): 11×, not
    // 11 against 39 over the hour the agent has been known (0.28×).
    expect(checked.factors.frequency.value).toBe(11);
    expect(checked.flags.map((f) => f.code)).toContain('HIGH_FREQUENCY');
  });

  it('leaves out of the native average a record the chain check found to move a token', async () => {
    const agent = await createAgent(t.app);
    const now = Math.floor(t.clock.now.getTime() / 1000);
    for (let i = 0; i < 6; i++) await recordTx(t.app, agent, { amount: '1000', timestamp: now - 86_400 * (i + 1) });
    // A record without an asset, 10^21 of an 18-decimal token as the chain check found it to be.
    const tokenTx = randomTxHash();
    const recorded = await post(t.app, '/api/transactions/record', {
      agent,
      txHash: tokenTx,
      amount: '1000000000000000000000',
      type: 0,
      timestamp: now - 3_600 * 3,
    });
    expect(recorded.statusCode, recorded.body).toBe(201);
    await t.database.db
      .updateTable('transactions')
      .set({ moved_token: `0x${'7'.repeat(40)}` })
      .where('tx_hash', '=', tokenTx)
      .execute();
    const checked = successEnvelope(anomalyResult).parse(
      (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '50000', type: 0 })).json(),
    ).data;
    // 50,000 wei against the six native records' 1,000: 50×, not a speck of the token's amount.
    expect(checked.factors.largeValue).toMatchObject({ value: 50, risk: 1 });
    expect(checked.flags.map((f) => f.code)).toContain('LARGE_VALUE');
  });

  it('judges a transaction checked after it was recorded as it judged it before', async () => {
    const agent = await createAgent(t.app);
    const now = Math.floor(t.clock.now.getTime() / 1000);
    for (let i = 0; i < 6; i++) await recordTx(t.app, agent, { amount: '1000', timestamp: now - 86_400 * (i + 1) });
    const txHash = randomTxHash();
    const check = async () =>
      successEnvelope(anomalyResult).parse(
        (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1000', type: 0, txHash })).json(),
      ).data;
    const before = await check();
    const recorded = await post(t.app, '/api/transactions/record', {
      agent,
      txHash,
      amount: '1000',
      type: 0,
      timestamp: now,
    });
    expect(recorded.statusCode, recorded.body).toBe(201);
    const after = await check();
    expect(after.factors).toEqual(before.factors);
    // Another transaction recorded this hour does count.
    await recordTx(t.app, agent, { amount: '1000', timestamp: now });
    expect((await check()).factors.frequency.value).toBeGreaterThan(before.factors.frequency.value);
  });

  it('accepts any well-formed address, with no history', async () => {
    const res = await post(t.app, '/api/scores/anomaly-check', { agent: randomAddress(), amount: '1', type: 0 });
    expect(res.json().data).toMatchObject({ riskScore: 0, flags: [{ code: 'NO_HISTORY' }] });
  });

  it('takes the type as type or txType, number or name, and refuses conflicts', async () => {
    const agent = randomAddress();
    for (const body of [{ type: 2 }, { txType: 2 }, { txType: 'TRANSFER' }, { type: 'TRANSFER', txType: 2 }]) {
      expect(
        (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1', ...body })).statusCode,
        JSON.stringify(body),
      ).toBe(200);
    }
    for (const body of [{}, { type: 6 }, { type: 1, txType: 2 }, { txType: 'NOPE' }]) {
      expect(
        (await post(t.app, '/api/scores/anomaly-check', { agent, amount: '1', ...body })).statusCode,
        JSON.stringify(body),
      ).toBe(400);
    }
    expect((await post(t.app, '/api/scores/anomaly-check', { agent, amount: '0', type: 0 })).statusCode).toBe(400);
  });
});

describe('POST /api/scores/enrich', () => {
  it('derives reputation and risk from the agent’s data and its latest checks', async () => {
    const agent = await createAgent(t.app);
    await post(t.app, `/api/agents/${agent}/score`, { score: 815, reason: '0x' });
    const calm = (await post(t.app, '/api/scores/enrich', { agent })).json().data;
    expect(calm).toMatchObject({
      sanctionsClean: true,
      apiReputationScore: 82,
      riskLevel: 'LOW',
      sources: { score: 815, latestAnomaly: null },
    });
    // A HIGH anomaly raises the risk level.
    for (let i = 0; i < 6; i++)
      await recordTx(t.app, agent, {
        amount: '100',
        success: i > 2,
        timestamp: Math.floor(t.clock.now.getTime() / 1000) - 3600 * (i + 2),
      });
    await post(t.app, '/api/scores/anomaly-check', { agent, amount: '100000', type: 0 });
    const risky = (await post(t.app, '/api/scores/enrich', { agent })).json().data;
    expect(risky.riskLevel).toBe('HIGH');
    expect(risky.sources.latestAnomaly.severity).toBe('HIGH');
  });

  it('an unknown address is clean with reputation 0 and MEDIUM risk', async () => {
    const res = await post(t.app, '/api/scores/enrich', { agent: randomAddress() });
    expect(res.json().data).toMatchObject({
      sanctionsClean: true,
      apiReputationScore: 0,
      riskLevel: 'MEDIUM',
      sources: { known: false },
    });
  });
});

describe('importing a new OFAC snapshot', () => {
  it('takes effect at once, lists what changed, and re-scores the agents whose status changed', async () => {
    const ctx = await createTestApp({ jobs: 'in-process' });
    try {
      const newlyListed = '0x1111111111111111111111111111111111111111';
      const delisted = USDT_ONLY;
      await createAgent(ctx.app, { address: newlyListed });
      await createAgent(ctx.app, { address: delisted });
      await recordTx(ctx.app, newlyListed, { amount: (10n ** 18n).toString() });
      await recordTx(ctx.app, delisted, { amount: (10n ** 18n).toString() });
      await post(ctx.app, '/api/scores/recompute', { agents: [newlyListed, delisted] });
      expect((await get(ctx.app, `/api/agents/${newlyListed}/score`)).json().data.score).toBe(488);
      expect((await get(ctx.app, `/api/agents/${delisted}/score`)).json().data.score).toBe(0);

      const xml = readFileSync(new URL('../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');
      const result = await ctx.services.sanctions.importXml(xml, undefined, { force: true });
      expect(result).toMatchObject({ snapshotDate: '2026-11-03', entries: 3 });
      expect(result.added).toEqual([newlyListed, '0x2222222222222222222222222222222222222222']);
      expect(result.removed).toHaveLength(155);
      expect(result.changedAgents).toEqual(
        expect.arrayContaining([
          { address: newlyListed, sanctioned: true },
          { address: delisted, sanctioned: false },
        ]),
      );
      expect(result.changedAgents).toHaveLength(2);

      const screened = (await post(ctx.app, '/api/verify/sanctions', { address: newlyListed })).json().data;
      expect(screened).toMatchObject({
        sanctioned: true,
        matchedLists: ['ETH'],
        source: { snapshotDate: '2026-11-03', entries: 3 },
      });
      expect((await post(ctx.app, '/api/verify/sanctions', { address: delisted })).json().data.sanctioned).toBe(false);
      expect((await get(ctx.app, `/api/agents/${newlyListed}/score`)).json().data.score).toBe(0);
      expect((await get(ctx.app, `/api/agents/${delisted}/score`)).json().data.score).toBe(488);
    } finally {
      await ctx.close();
    }
  });

  it('re-scores an observed agent it lists too: a sanctioned address scores 0, registered or not', async () => {
    const ctx = await createTestApp({ jobs: 'in-process' });
    try {
      // Known from a recorded transaction only, and scored by the model.
      const observed = '0x2222222222222222222222222222222222222222';
      await recordTx(ctx.app, observed, { amount: (10n ** 18n).toString() });
      await post(ctx.app, '/api/scores/recompute', { agents: [observed] });
      const score = async () => (await get(ctx.app, `/api/agents/${observed}/score`)).json().data.score;
      expect(await score()).toBe(488);
      const xml = readFileSync(new URL('../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');
      const result = await ctx.services.sanctions.importXml(xml, undefined, { force: true });
      expect(result.added).toContain(observed);
      expect(await score()).toBe(0);
    } finally {
      await ctx.close();
    }
  });

  it('imports a new list while an earlier import still owes its re-scoring, then re-scores both', async () => {
    const ctx = await createTestApp({ jobs: 'in-process' });
    try {
      const first = '0x1111111111111111111111111111111111111111';
      const second = '0x3333333333333333333333333333333333333333';
      for (const address of [first, second]) {
        await createAgent(ctx.app, { address });
        await recordTx(ctx.app, address, { amount: (10n ** 18n).toString() });
      }
      await post(ctx.app, '/api/scores/recompute', { agents: [first, second] });
      const score = async (address: string) => (await get(ctx.app, `/api/agents/${address}/score`)).json().data.score;
      expect([await score(first), await score(second)]).toEqual([488, 488]);
      // Re-scoring fails for as long as its queue is away: two imports in a row while it is.
      const failing = createSanctionsService({
        db: ctx.database.db,
        clock: () => ctx.clock.now,
        rescore: async () => {
          throw new Error('the queue is away');
        },
      });
      const xml = readFileSync(new URL('../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');
      expect(await failing.importXml(xml, undefined, { force: true })).toMatchObject({
        rescoreOwed: 'the queue is away',
      });
      // The second lists `first` again (no change of its own for it) and adds `second`.
      const next = await failing.importSnapshot({
        name: 'next',
        snapshotDate: '2026-11-04',
        lists: {
          ETH: [
            first,
            '0x2222222222222222222222222222222222222222',
            '0x098b716b8aaf21512996dc57eb0615e2383e2f96',
            second,
          ],
        },
      });
      expect(next).toMatchObject({ entries: 4, added: [second], removed: [], changedAgents: null });
      expect((await post(ctx.app, '/api/verify/sanctions', { address: second })).json().data).toMatchObject({
        sanctioned: true,
        source: { snapshotDate: '2026-11-04' },
      });
      expect([await score(first), await score(second)]).toEqual([488, 488]);
      // Once re-scoring works again, what both imports changed is re-scored, not only the last one's.
      const started = await createTestRuntime(ctx.database);
      await started.close();
      expect([await score(first), await score(second)]).toEqual([0, 0]);
    } finally {
      await ctx.close();
    }
  });

  it('is re-scored by the next start when its importer stopped after activating it', async () => {
    const ctx = await createTestApp({ jobs: 'in-process' });
    try {
      const newlyListed = '0x1111111111111111111111111111111111111111';
      await createAgent(ctx.app, { address: newlyListed });
      await recordTx(ctx.app, newlyListed, { amount: (10n ** 18n).toString() });
      await post(ctx.app, '/api/scores/recompute', { agents: [newlyListed] });
      const score = async () => (await get(ctx.app, `/api/agents/${newlyListed}/score`)).json().data.score;
      expect(await score()).toBe(488);
      // An importer that stops once the snapshot is active, before it re-scored anyone.
      const stopping = createSanctionsService({
        db: ctx.database.db,
        clock: () => ctx.clock.now,
        rescore: async () => {
          throw new Error('the importer stopped');
        },
      });
      const xml = readFileSync(new URL('../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');
      // The list is active all the same, and the answer says the re-scoring is owed.
      expect(await stopping.importXml(xml, undefined, { force: true })).toMatchObject({
        entries: 3,
        changedAgents: null,
        rescoreOwed: 'the importer stopped',
      });
      expect((await post(ctx.app, '/api/verify/sanctions', { address: newlyListed })).json().data.sanctioned).toBe(
        true,
      );
      expect(await score()).toBe(488);
      // A process that starts on the database finishes the re-scoring owed.
      const started = await createTestRuntime(ctx.database);
      await started.close();
      expect(await score()).toBe(0);
      const owed = await ctx.database.db
        .selectFrom('sanctions_snapshots')
        .select('id')
        .where('is_active', '=', true)
        .where('rescored_at', 'is', null)
        .execute();
      expect(owed).toEqual([]);
    } finally {
      await ctx.close();
    }
  });
});
