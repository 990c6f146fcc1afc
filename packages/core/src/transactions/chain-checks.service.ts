import type { DB, Kysely } from '@vouch/db';
import { type JobRunner, jobs } from '@vouch/jobs';
import type { ChainStatus } from '@vouch/schemas';
import type { Clock } from '../shared/clock.ts';
import type { ChainReader } from '../verification/chain.ts';
import { counts, finalStatuses, judge, RECHECK_WINDOW_MS, type ScoreBasis } from './transactions.model.ts';
import * as repo from './transactions.repository.ts';

export interface ChainChecksDeps {
  db: Kysely<DB>;
  clock: Clock;
  runner: JobRunner;
  /** The chain reader shared with the verification; null when no chain is configured. */
  chain: Pick<ChainReader, 'transaction'> | null;
  basis: ScoreBasis;
  /** Called when a stored state changed what the score model counts (schedules the agent's refresh). */
  onCountChanged?: (agent: string) => void;
  onEnqueueError?: (error: unknown, context: Record<string, unknown>) => void;
  /** How often the runtime runs the re-check; also how long a `pending` row is left to its own job first. */
  recheckIntervalMs: number;
}

/** Transactions one re-check queues at most; the next one takes the rest. */
export const RECHECK_BATCH = 500;

/** Thrown to have the executor try a check again later (attempts and backoff from the registry). */
export class ChainCheckRetry extends Error {
  override name = 'ChainCheckRetry';
}

export interface ChainCheckResult {
  status: ChainStatus | null;
  changed: boolean;
}

/**
 * Checks recorded transactions against the chain, off the request path: recording queues a
 * `checks.transaction` job, and a periodic re-check (`maintenance.recheck-transactions`) queues
 * again the ones whose job was lost or whose answer may still change.
 */
export function createChainChecks({
  db,
  clock,
  runner,
  chain,
  basis,
  onCountChanged,
  onEnqueueError,
  recheckIntervalMs,
}: ChainChecksDeps) {
  const enqueueCheck = (agent: string, txHash: string) =>
    runner.enqueue(jobs.chainCheck, { agent, txHash }, { dedupeId: `chain:${agent}:${txHash}` });

  async function store(
    agent: string,
    txHash: string,
    status: ChainStatus,
    detail: string,
    movedToken: string | null = null,
  ): Promise<ChainCheckResult> {
    const stored = await repo.storeChainStatus(db, { agent, txHash, status, detail, movedToken, now: clock() });
    if (!stored) {
      // Another delivery stored a final state first: that one stands.
      const row = await repo.findTransaction(db, agent, txHash);
      return { status: row?.chain_status ?? null, changed: false };
    }
    if (counts(stored.previous, basis) !== counts(status, basis)) onCountChanged?.(agent);
    return { status, changed: stored.previous !== status };
  }

  return {
    /** Whether a chain is configured: recorded transactions start `pending` rather than `unverified`. */
    enabled: chain !== null,

    /** Queues the check of a recorded transaction; never fails the caller (the re-check queues it later). */
    enqueue(agent: string, txHash: string): void {
      enqueueCheck(agent, txHash).catch((error) =>
        onEnqueueError?.(error, { job: jobs.chainCheck.name, agent, txHash }),
      );
    },

    /**
     * Reads the transaction from the chain and stores what it says. A node that does not answer,
     * or a transaction it knows but has not mined, is tried again (ChainCheckRetry) until the last
     * attempt, which stores `unreachable` or `not_found`. Safe to repeat: a final state is kept.
     */
    async check(agent: string, txHash: string, { lastAttempt }: { lastAttempt: boolean }): Promise<ChainCheckResult> {
      const row = await repo.findTransaction(db, agent, txHash);
      if (!row) return { status: null, changed: false };
      if (finalStatuses.has(row.chain_status)) {
        // A repeated delivery: the refresh the first one scheduled may have been lost with it.
        if (row.chain_status === 'verified' && basis === 'verified') onCountChanged?.(agent);
        return { status: row.chain_status, changed: false };
      }
      if (!chain) return { status: row.chain_status, changed: false };

      const answer = await chain.transaction(txHash);
      if (!answer.ok) {
        if (!lastAttempt) throw new ChainCheckRetry(`chain read failed: ${answer.reason}`);
        return store(agent, txHash, 'unreachable', `the node did not answer: ${answer.reason}`);
      }
      const tx = answer.value;
      if (!tx) return store(agent, txHash, 'not_found', 'the chain has no transaction with this hash');
      if (tx.status === null) {
        if (!lastAttempt) throw new ChainCheckRetry('the transaction is not mined yet');
        return store(agent, txHash, 'not_found', 'the node knows the transaction, but it is not mined yet');
      }
      const verdict = judge(row, { ...tx, status: tx.status });
      return store(agent, txHash, verdict.status, verdict.detail, verdict.movedToken);
    },

    /** Queues the checks of transactions that need one (again); see `transactionsToRecheck`. */
    async recheck(): Promise<{ queued: number }> {
      if (!chain) return { queued: 0 };
      const rows = await repo.transactionsToRecheck(db, {
        now: clock(),
        graceMs: recheckIntervalMs,
        minWaitMs: recheckIntervalMs,
        windowMs: RECHECK_WINDOW_MS,
        limit: RECHECK_BATCH,
      });
      for (const row of rows) await enqueueCheck(row.agent, row.tx_hash);
      return { queued: rows.length };
    },
  };
}

export type ChainChecks = ReturnType<typeof createChainChecks>;
