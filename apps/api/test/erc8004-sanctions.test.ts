import { sql } from '@vouch/db';
import {
  createAgent,
  createTestApp,
  LOGS_CHAIN_BLOCK,
  logsChain,
  newFeedbackLog,
  randomAddress,
  type TestContext,
  testIndexer,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// On the bundled OFAC list (the ETH list).
const LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const CHAIN_ID = 7_000_011;
const AGENT_ID = 11n;

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('ERC-8004 feedback while no sanctions list is active', () => {
  it('raises no score: its clients could not be screened, and the evidence says so', async () => {
    let reputation = '';
    // A listed wallet rates the agent 100.
    const chain = logsChain(
      CHAIN_ID,
      () => reputation,
      () => [
        newFeedbackLog(reputation, {
          agentId: AGENT_ID,
          client: LISTED,
          value: 100n,
          uri: '',
          hash: `0x${'0'.repeat(64)}`,
          block: LOGS_CHAIN_BLOCK,
        }),
      ],
    );
    const { service, identityRegistry, reputationRegistry } = testIndexer(t, chain);
    reputation = reputationRegistry;
    const agent = await createAgent(t.app);
    await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, agent_uri, agent_wallet, updated_block)
      VALUES (${CHAIN_ID}, ${identityRegistry}, ${AGENT_ID.toString()}, ${randomAddress()}, '', ${agent}, 1)`.execute(
      t.database.db,
    );
    await service.index();
    const evidence = async () => (await service.evidence([agent], false)).get(agent);

    // Screened: the listed client's rating weighs nothing.
    const screened = await evidence();
    expect(screened?.status).toBe('current');
    expect(screened?.feedback).toMatchObject({ total: 1, counted: 0, sanctionedClients: 1 });
    expect(screened?.adjustment).toMatchObject({ adjustment: 0, applied: false });

    // Unscreened: nothing says the client is clean, so its rating may not raise the score.
    const unscreened = await withoutSanctionsList(t.database.db, evidence);
    expect(unscreened?.feedback).toMatchObject({ total: 1, counted: 1, sanctionedClients: 0 });
    expect(unscreened?.adjustment.adjustment).toBeGreaterThan(0);
    expect(unscreened?.adjustment.applied).toBe(false);
    expect(unscreened?.detail).toMatch(/no sanctions list is active/);
  });
});
