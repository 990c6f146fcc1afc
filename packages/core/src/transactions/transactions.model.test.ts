import { describe, expect, it } from 'vitest';
import { TRANSFER_TOPIC, tokenTransfers } from '../verification/chain.ts';
import { counts, judge, type MinedTransaction, type RecordedFacts } from './transactions.model.ts';

const agent = `0x${'a'.repeat(40)}`;
const bob = `0x${'b'.repeat(40)}`;
const carol = `0x${'c'.repeat(40)}`;
const token = `0x${'d'.repeat(40)}`;
const router = `0x${'e'.repeat(40)}`;

const recorded = (fields: Partial<RecordedFacts> = {}): RecordedFacts => ({
  agent,
  amount: '1000',
  success: true,
  counterparty: null,
  ...fields,
});
const mined = (fields: Partial<MinedTransaction> = {}): MinedTransaction => ({
  status: 'success',
  blockNumber: 7n,
  from: agent,
  to: bob,
  value: 1000n,
  transfers: [],
  ...fields,
});

describe('judge: a record against its mined transaction', () => {
  it('verifies a native transfer the agent sent, with its value and recipient', () => {
    expect(judge(recorded({ counterparty: bob }), mined())).toEqual({
      status: 'verified',
      fields: [],
      detail: 'block 7: success, native value from the agent',
      movedToken: null,
    });
    // Without a counterparty the recipient is not looked at.
    expect(judge(recorded(), mined({ to: carol })).status).toBe('verified');
    expect(judge(recorded(), mined()).movedToken).toBeNull();
  });

  it('names every field the chain disagrees with', () => {
    const verdict = judge(recorded({ counterparty: carol, success: false }), mined({ from: bob, value: 5n }));
    expect(verdict.status).toBe('mismatch');
    expect(verdict.fields).toEqual(['from', 'success', 'amount', 'counterparty']);
    expect(verdict.detail).toMatch(/^block 7: from: sent by 0xb+, not the agent/);
    expect(verdict.detail).toContain('success: recorded as failed, but it succeeded');
  });

  it('compares the amount with the native value, exactly', () => {
    const verdict = judge(recorded({ amount: '1001' }), mined());
    expect(verdict).toMatchObject({ status: 'mismatch', fields: ['amount'] });
    expect(verdict.detail).toContain('amount: 1001 is not what the agent moved (1000 wei of native value)');
    const big = 2n ** 256n - 1n;
    expect(judge(recorded({ amount: big.toString() }), mined({ value: big })).status).toBe('verified');
  });

  it('accepts a token transfer from the agent as the amount and its recipient as the counterparty', () => {
    const tokenPayment = mined({ to: token, value: 0n, transfers: [{ token, from: agent, to: bob, value: 1000n }] });
    const verdict = judge(recorded({ counterparty: bob }), tokenPayment);
    expect(verdict).toMatchObject({
      status: 'verified',
      detail: `block 7: success, a transfer of token ${token} from the agent`,
    });
    // What moved was that token, not wei (kept out of the native volume).
    expect(verdict.movedToken).toBe(token);
    // The token contract itself, the transaction's recipient, is a counterparty too.
    expect(judge(recorded({ counterparty: token }), tokenPayment).status).toBe('verified');
    // A transfer to the agent is not one it made.
    const incoming = mined({ to: token, value: 0n, transfers: [{ token, from: bob, to: agent, value: 1000n }] });
    expect(judge(recorded(), incoming)).toMatchObject({ status: 'mismatch', fields: ['amount'] });
  });

  it('with an ERC-20 asset, counts only a transfer of that token as the amount', () => {
    const asset = `eip155:8453/erc20:${token}`;
    const other = `0x${'f'.repeat(40)}`;
    const payment = mined({ to: token, value: 0n, transfers: [{ token, from: agent, to: bob, value: 1000n }] });
    expect(judge(recorded({ asset, counterparty: bob }), payment)).toMatchObject({
      status: 'verified',
      movedToken: null,
    });
    const wrongToken = mined({
      to: other,
      value: 0n,
      transfers: [{ token: other, from: agent, to: bob, value: 1000n }],
    });
    expect(judge(recorded({ asset }), wrongToken)).toMatchObject({ status: 'mismatch', fields: ['amount'] });
    // The native value is not that token.
    expect(judge(recorded({ asset }), mined())).toMatchObject({ status: 'mismatch', fields: ['amount'] });
  });

  it('takes the amount and the counterparty from different legs of a routed payment', () => {
    // The agent calls a router, which moves its tokens to a pool.
    const routed = mined({ to: router, value: 0n, transfers: [{ token, from: agent, to: carol, value: 1000n }] });
    expect(judge(recorded({ counterparty: router }), routed).status).toBe('verified');
    expect(judge(recorded({ counterparty: carol }), routed).status).toBe('verified');
    expect(judge(recorded({ counterparty: bob }), routed)).toMatchObject({ fields: ['counterparty'] });
  });

  it("verifies a contract agent's payment sent by someone else through its token transfer only", () => {
    const viaOwner = mined({
      from: bob,
      to: agent,
      value: 0n,
      transfers: [{ token, from: agent, to: carol, value: 1000n }],
    });
    expect(judge(recorded({ counterparty: carol }), viaOwner).status).toBe('verified');
    // Native value sent by someone else is not the agent's.
    expect(judge(recorded(), mined({ from: bob }))).toMatchObject({ status: 'mismatch', fields: ['from', 'amount'] });
  });

  it('verifies a reverted transaction recorded as failed, and refuses one recorded as successful', () => {
    expect(judge(recorded({ success: false }), mined({ status: 'reverted' })).status).toBe('verified');
    const verdict = judge(recorded(), mined({ status: 'reverted' }));
    expect(verdict).toMatchObject({ status: 'mismatch', fields: ['success'] });
    expect(verdict.detail).toContain('success: recorded as successful, but it reverted');
  });
});

describe('counts', () => {
  it('counts only verified transactions on the verified basis, and every one on all', () => {
    for (const status of ['unverified', 'pending', 'mismatch', 'not_found', 'unreachable'] as const) {
      expect(counts(status, 'verified')).toBe(false);
      expect(counts(status, 'all')).toBe(true);
    }
    expect(counts('verified', 'verified')).toBe(true);
  });
});

describe('tokenTransfers', () => {
  const word = (hex: string) => `0x${hex.padStart(64, '0')}`;
  it('reads ERC-20 Transfer logs and leaves out other events and ERC-721 transfers', () => {
    const logs = [
      {
        address: token.toUpperCase().replace('0X', '0x'),
        topics: [TRANSFER_TOPIC, word(agent.slice(2)), word(bob.slice(2))],
        data: word('3e8'),
      },
      // ERC-721: the token id is a fourth topic.
      { address: token, topics: [TRANSFER_TOPIC, word(agent.slice(2)), word(bob.slice(2)), word('1')], data: '0x' },
      { address: token, topics: [word('1234'), word(agent.slice(2)), word(bob.slice(2))], data: word('1') },
    ];
    expect(tokenTransfers(logs)).toEqual([{ token, from: agent, to: bob, value: 1000n }]);
  });
});
