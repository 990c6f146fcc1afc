import type { DB, Kysely, TransactionRow } from '@vouch/db';
import {
  type ChainStatus,
  type RecordInput,
  type TransactionRecord,
  type TransactionStats,
  transactionTypes,
} from '@vouch/schemas';
import { ensureObserved, findAgent, touchAgent } from '../agents/agents.repository.ts';
import { assertOwns } from '../agents/agents.service.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { idFromCursor, page } from '../shared/cursor.ts';
import { AgentNotFoundError, TransactionConflictError, ValidationError } from '../shared/errors.ts';
import { inTransaction } from '../shared/transaction.ts';
import * as repo from './transactions.repository.ts';

export interface TransactionsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /**
   * Called after a new transaction is committed: schedules the agent's score refresh and, when
   * its state is `pending`, the check against the chain.
   */
  onRecorded?: (recorded: { agent: string; txHash: string; chainStatus: ChainStatus }) => void;
  /** A chain is configured: new transactions start `pending` (a check is queued), else `unverified`. */
  verifiesOnChain: boolean;
  /** How far in the future a transaction's timestamp may be (clock skew); later ones are refused. */
  maxFutureSkewMs: number;
  /** API processes cache the agent's standing, which counts its transactions (its confidence). */
  cache?: ReadCache | undefined;
}

export function toRecord(row: TransactionRow): TransactionRecord {
  return {
    agent: row.agent,
    txHash: row.tx_hash,
    amount: row.amount,
    asset: row.asset,
    type: row.type,
    typeName: transactionTypes[row.type] ?? 'OTHER',
    success: row.success,
    counterparty: row.counterparty,
    timestamp: toUnixSeconds(row.occurred_at),
    recordedAt: toUnixSeconds(row.recorded_at),
    backdated: row.backdated,
    chainStatus: row.chain_status,
    chainDetail: row.chain_detail,
    chainCheckedAt: row.chain_checked_at ? toUnixSeconds(row.chain_checked_at) : null,
  };
}

/** Fields of a retry that disagree with the stored record (an omitted timestamp matches any). */
function conflictingFields(row: TransactionRow, input: RecordInput): string[] {
  const fields: string[] = [];
  if (row.amount !== input.amount) fields.push('amount');
  if (row.asset !== (input.asset ?? '')) fields.push('asset');
  if (row.type !== input.type) fields.push('type');
  if (row.success !== (input.success ?? true)) fields.push('success');
  if (row.counterparty !== (input.counterparty ?? null)) fields.push('counterparty');
  if (input.timestamp !== undefined && toUnixSeconds(row.occurred_at) !== input.timestamp) fields.push('timestamp');
  return fields;
}

export function createTransactionsService({
  db,
  clock,
  audit,
  onRecorded,
  maxFutureSkewMs,
  verifiesOnChain,
  cache,
}: TransactionsDeps) {
  return {
    /**
     * Records a transaction, making its agent known (observed) if needed. The same
     * `(agent, txHash)` with the same content answers the stored record
     * (`created: false`); with different content it is a conflict. A registered agent's
     * history is written by the organization that registered it.
     */
    async record(
      actor: Actor,
      input: RecordInput,
      scope: { executor?: Kysely<DB>; afterCommit?: (effect: () => void) => void } = {},
    ): Promise<{ created: boolean; record: TransactionRecord }> {
      const executor = scope.executor ?? db;
      const now = clock();
      if (input.timestamp !== undefined && input.timestamp * 1000 > now.getTime() + maxFutureSkewMs) {
        throw new ValidationError([
          {
            path: 'body.timestamp',
            message: `is ${input.timestamp - Math.floor(now.getTime() / 1000)} s in the future; at most ${maxFutureSkewMs / 1000} s of clock skew is accepted`,
          },
        ]);
      }
      const run = async (trx: Kysely<DB>) => {
        await ensureObserved(trx, input.agent, now);
        const agent = await findAgent(trx, input.agent);
        if (agent) assertOwns(actor, agent);
        const inserted = await repo.insertTransaction(trx, {
          agent: input.agent,
          txHash: input.txHash,
          amount: input.amount,
          asset: input.asset ?? '',
          type: input.type,
          success: input.success ?? true,
          counterparty: input.counterparty ?? null,
          occurredAt: input.timestamp === undefined ? now : new Date(input.timestamp * 1000),
          recordedAt: now,
          chainStatus: verifiesOnChain ? 'pending' : 'unverified',
        });
        if (inserted) {
          await touchAgent(trx, input.agent, now);
          await audit.append(
            trx,
            actor,
            'transaction.recorded',
            input.agent,
            {
              txHash: inserted.tx_hash,
              amount: inserted.amount,
              asset: inserted.asset,
              type: inserted.type,
              success: inserted.success,
            },
            now,
          );
          return { created: true, row: inserted };
        }
        const existing = await repo.findTransaction(trx, input.agent, input.txHash);
        if (!existing) throw new Error('transaction vanished between insert and read');
        return { created: false, row: existing };
      };
      const { created, row } = await inTransaction(db, executor, run);
      if (!created) {
        const fields = conflictingFields(row, input);
        if (fields.length) throw new TransactionConflictError(input.txHash, fields);
      } else {
        // The score refresh and the chain check must see the committed row: inside a caller's transaction, defer them.
        const effect = () => {
          // Read your own write: this process's cached confidence counts the new transaction
          // before the answer goes, not once the notification comes back.
          cache?.invalidate('agents', row.agent);
          onRecorded?.({ agent: row.agent, txHash: row.tx_hash, chainStatus: row.chain_status });
        };
        if (executor.isTransaction && scope.afterCommit) scope.afterCommit(effect);
        else if (!executor.isTransaction) effect();
      }
      return { created, record: toRecord(row) };
    },

    /** The agent's recorded transactions, newest recorded first (paginated). */
    async list(address: string, query: { limit: number; cursor?: string | undefined }) {
      const rows = await repo.listTransactions(
        db,
        address,
        query.cursor === undefined ? undefined : idFromCursor(query.cursor),
        query.limit,
      );
      if (rows.length === 0 && !(await findAgent(db, address))) throw new AgentNotFoundError(address);
      const { items, nextCursor } = page(rows, query.limit);
      return { transactions: items.map(toRecord), nextCursor };
    },

    async stats(address: string): Promise<TransactionStats> {
      const [agent, stats] = await Promise.all([findAgent(db, address), repo.transactionStats(db, address)]);
      if (!agent) throw new AgentNotFoundError(address);
      return {
        totalCount: stats.total_count,
        successCount: stats.success_count,
        failedCount: stats.total_count - stats.success_count,
        totalVolume: stats.total_volume,
        lastTransactionTime: stats.last_time ? toUnixSeconds(stats.last_time) : 0,
      };
    },
  };
}

export type TransactionsService = ReturnType<typeof createTransactionsService>;
