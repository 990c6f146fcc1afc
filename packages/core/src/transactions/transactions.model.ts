import type { ChainStatus } from '@vouch/db';
import type { ChainTransaction } from '../verification/chain.ts';

/** Which recorded transactions the score model counts (SCORE_TRANSACTIONS). */
export type ScoreBasis = 'verified' | 'all';

/** Whether the score model counts a transaction in this state. */
export function counts(status: ChainStatus, basis: ScoreBasis): boolean {
  return basis === 'all' || status === 'verified';
}

/** States the chain can no longer change: the check of such a row is never repeated. */
export const finalStatuses: ReadonlySet<ChainStatus> = new Set(['verified', 'mismatch']);

/**
 * `not_found` and `unreachable` rows are looked at again for this long after they were recorded
 * (a transaction still propagating or waiting to be mined, a node that was down), each time after
 * at least as long again as they have waited so far: about a dozen reads in a day per row.
 */
export const RECHECK_WINDOW_MS = 86_400_000;

/** What the agent said about a transaction, as stored. */
export interface RecordedFacts {
  agent: string;
  amount: string;
  /** CAIP-19 id of what moved; '' (or absent) when the record did not say. */
  asset?: string;
  success: boolean;
  counterparty: string | null;
}

/** A transaction the chain has mined: its receipt has a status. */
export type MinedTransaction = ChainTransaction & { status: 'success' | 'reverted' };

export interface ChainVerdict {
  status: 'verified' | 'mismatch';
  /** The fields the chain disagrees with, in the order checked (empty when verified). */
  fields: Array<'from' | 'success' | 'amount' | 'counterparty'>;
  detail: string;
  /**
   * The token whose transfer matched the amount of a record that named no asset (not the native
   * value): what moved was that token, not wei. Null otherwise.
   */
  movedToken: string | null;
}

/** The token contract of an `eip155:<chain>/erc20:<address>` asset id, or null. */
export function erc20Of(asset: string | undefined): string | null {
  const match = /^eip155:[0-9]+\/erc20:(0x[0-9a-f]{40})$/.exec(asset ?? '');
  return match?.[1] ?? null;
}

/**
 * A mined transaction against the record (docs/api.md "Transactions"). The agent must have sent
 * it, or be the sender of one of its ERC-20 transfers (a contract agent's payment is sent by its
 * owner or a bundler); its success must be the receipt's status; `amount` must be what the agent
 * moved in it: the native value it sent, or one of its token transfers' value — with an ERC-20
 * `asset`, a transfer of that token only; `counterparty`, when given, must be where it went: the
 * transaction's recipient (or called contract), or the recipient of one of those token transfers.
 */
export function judge(record: RecordedFacts, tx: MinedTransaction): ChainVerdict {
  const token = erc20Of(record.asset);
  const sentByAgent = tx.from === record.agent;
  const agentTransfers = tx.transfers.filter((t) => t.from === record.agent && (token === null || t.token === token));
  const amount = BigInt(record.amount);
  const problems: Array<[ChainVerdict['fields'][number], string]> = [];

  if (!sentByAgent && agentTransfers.length === 0) {
    problems.push(['from', `sent by ${tx.from}, not the agent, and none of its token transfers is from the agent`]);
  }
  if (record.success !== (tx.status === 'success')) {
    const outcome = tx.status === 'success' ? 'succeeded' : 'reverted';
    problems.push(['success', `recorded as ${record.success ? 'successful' : 'failed'}, but it ${outcome}`]);
  }
  const nativeMatches = token === null && sentByAgent && tx.value === amount;
  const tokenMatch = agentTransfers.find((t) => t.value === amount);
  if (!nativeMatches && !tokenMatch) {
    const moved = [
      ...(sentByAgent && token === null ? [`${tx.value} wei of native value`] : []),
      ...agentTransfers.map((t) => `${t.value} of token ${t.token}`),
    ];
    problems.push(['amount', `${record.amount} is not what the agent moved (${moved.join(', ') || 'nothing'})`]);
  }
  if (record.counterparty !== null) {
    const recipients = [...(sentByAgent && tx.to ? [tx.to] : []), ...agentTransfers.map((t) => t.to)];
    if (!recipients.includes(record.counterparty)) {
      problems.push([
        'counterparty',
        `${record.counterparty} is not where it went (${[...new Set(recipients)].join(', ') || 'no recipient'})`,
      ]);
    }
  }

  const block = `block ${tx.blockNumber ?? '?'}`;
  if (problems.length) {
    return {
      status: 'mismatch',
      fields: problems.map(([field]) => field),
      detail: `${block}: ${problems.map(([field, why]) => `${field}: ${why}`).join('; ')}`,
      movedToken: null,
    };
  }
  const what = nativeMatches ? 'native value' : `a transfer of token ${tokenMatch?.token}`;
  return {
    status: 'verified',
    fields: [],
    detail: `${block}: ${tx.status}, ${what} from the agent`,
    movedToken: !nativeMatches && token === null ? (tokenMatch?.token ?? null) : null,
  };
}
