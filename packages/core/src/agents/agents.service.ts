import type { AgentRow, DB, Kysely } from '@vouch/db';
import type { Agent, ListQuery, RegisterInput, ScoreHistoryQuery, SetScoreInput, SortOrder } from '@vouch/schemas';
import type { AuditService } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { EventsService } from '../events/events.service.ts';
import { confidenceOf } from '../scores/scores.model.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { cursorNotIssued, cursorText, encodeCursor, idFromCursor, page } from '../shared/cursor.ts';
import {
  AgentAlreadyRegisteredError,
  AgentNotFoundError,
  AgentNotRegisteredError,
  ForbiddenError,
} from '../shared/errors.ts';
import { inTransaction } from '../shared/transaction.ts';
import { colorFor, type Grade, gradeFor, gradeRange } from './agents.model.ts';
import * as repo from './agents.repository.ts';

export interface AgentsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** Score and grade changes are announced (docs/events.md); none without. */
  events?: EventsService | undefined;
  cache?: ReadCache | undefined;
  /** The score model counts only transactions verified on the chain (SCORE_TRANSACTIONS=verified): so does confidence. */
  verifiedOnly?: boolean;
  /** The agent's ERC-8004 identity on the indexed chain (none without an index), read in `executor` when given. */
  identityOf?: (address: string, executor?: Kysely<DB>) => Promise<Agent['erc8004']>;
}

/**
 * Only the organization that registered an agent (or the operator) changes what everyone reads
 * about it: its score, its owner. Other organizations read it, keep budgets for it and screen it.
 */
export function assertOwns(actor: Actor, agent: { address: string; organization_id: string | null }): void {
  if (actor.operator || agent.organization_id === null || agent.organization_id === actor.organizationId) return;
  throw new ForbiddenError(`agent ${agent.address} was registered by another organization, which alone may change it`, {
    agent: agent.address,
  });
}

export function toAgent(
  row: AgentRow & { transaction_count: number | null; total_volume: string | null },
  erc8004: Agent['erc8004'] = null,
): Agent {
  return {
    address: row.address,
    score: row.score,
    grade: gradeFor(row.score),
    color: colorFor(row.score),
    isRegistered: row.is_registered,
    owner: row.owner,
    ownerChangedAt: row.owner_changed_at ? toUnixSeconds(row.owner_changed_at) : null,
    metadata: row.metadata,
    firstSeenAt: toUnixSeconds(row.first_seen_at),
    registeredAt: row.registered_at ? toUnixSeconds(row.registered_at) : null,
    lastUpdated: toUnixSeconds(row.updated_at),
    transactionCount: row.transaction_count ?? 0,
    totalVolume: row.total_volume ?? '0',
    erc8004,
  };
}

/** A list cursor names its sort order: a cursor of one order is refused under another. */
function listCursor(sort: SortOrder, cursor: repo.ListCursor): string {
  return encodeCursor(JSON.stringify([sort, cursor.key, cursor.address]));
}

/** The furthest time from 1970 a JavaScript Date holds, in ms. */
const MAX_DATE_MS = 8.64e15;

function listPosition(cursor: string, sort: SortOrder): repo.ListCursor {
  try {
    const text = cursorText(cursor);
    const parsed: unknown = JSON.parse(text);
    if (
      // Only the text given out: the same array written otherwise is not a cursor of this service.
      JSON.stringify(parsed) === text &&
      Array.isArray(parsed) &&
      parsed.length === 3 &&
      parsed[0] === sort &&
      Number.isSafeInteger(parsed[1]) &&
      // A score, or a time in ms that a Date can hold (±8.64e15): another would fail as a parameter.
      (sort === 'recent' ? Math.abs(parsed[1]) <= MAX_DATE_MS : parsed[1] >= 0 && parsed[1] <= 1000) &&
      typeof parsed[2] === 'string' &&
      /^0x[0-9a-f]{40}$/.test(parsed[2])
    ) {
      return { key: parsed[1], address: parsed[2] };
    }
  } catch {
    // fall through to the validation error
  }
  throw cursorNotIssued();
}

export function createAgentsService({
  db,
  clock,
  audit,
  events,
  cache,
  verifiedOnly = false,
  identityOf = async () => null,
}: AgentsDeps) {
  /** The score and what its confidence rests on, through the read cache unless `fresh` or inside a transaction. */
  async function standingOf(address: string, fresh = false, executor: Kysely<DB> = db): Promise<repo.Standing | null> {
    const load = async () => (await repo.findStanding(executor, address, verifiedOnly)) ?? null;
    // A transaction's view is not everyone's: it neither reads nor fills the shared cache.
    return cache && !fresh && executor === db ? cache.read('agents', address, load) : load();
  }

  /** Throws unless the address is known; returns the row. */
  async function requireKnown(address: string, executor: Kysely<DB> = db): Promise<AgentRow> {
    const row = await repo.findAgent(executor, address);
    if (!row) throw new AgentNotFoundError(address);
    return row;
  }

  /**
   * The actor as the agent's owner organization logs it: the operator changing another
   * organization's agent is recorded in that organization's log, which is where its owner looks.
   */
  const inOwnersLog = (actor: Actor, row: AgentRow): Actor =>
    row.organization_id === null ? actor : { ...actor, organizationId: row.organization_id };

  /** A registered agent the actor's organization may change. */
  async function requireOwned(actor: Actor, address: string, executor: Kysely<DB> = db): Promise<AgentRow> {
    const row = await requireKnown(address, executor);
    if (!row.is_registered) throw new AgentNotRegisteredError(address);
    assertOwns(actor, row);
    return row;
  }

  return {
    requireKnown,
    requireOwned,

    async requireRegistered(address: string): Promise<AgentRow> {
      const row = await requireKnown(address);
      if (!row.is_registered) throw new AgentNotRegisteredError(address);
      return row;
    },

    async get(address: string): Promise<Agent> {
      const row = await repo.findAgentWithActivity(db, address);
      if (!row) throw new AgentNotFoundError(address);
      return toAgent(row, await identityOf(address));
    },

    /**
     * The stored score: the hottest read, served from the read cache when there is one, unless
     * `fresh` (the caller sent `Cache-Control: no-cache`).
     */
    async getScore(address: string, options: { fresh?: boolean } = {}) {
      const standing = await standingOf(address, options.fresh);
      if (standing === null) throw new AgentNotFoundError(address);
      const { score } = standing;
      return {
        score,
        grade: gradeFor(score),
        color: colorFor(score),
        ...confidenceOf(standing.evidence, standing.firstSeenAt, clock()),
      };
    },

    standingOf,

    /**
     * `executor` lets an idempotent request register inside its own transaction (every read in
     * it too), and `afterCommit` run what must follow that commit.
     */
    async register(
      actor: Actor,
      input: RegisterInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Agent> {
      const now = clock();
      const run = async (trx: Kysely<DB>) => {
        const row = await repo.registerAgent(trx, {
          address: input.address,
          organizationId: actor.organizationId,
          owner: input.owner ?? null,
          metadata: input.metadata ?? null,
          now,
        });
        if (!row) throw new AgentAlreadyRegisteredError(input.address);
        await audit.append(trx, actor, 'agent.registered', input.address, { owner: input.owner ?? null }, now);
      };
      await inTransaction(db, executor, run);
      afterCommit(() => cache?.invalidate('agents', input.address)); // a "not found" may be cached
      const full = await repo.findAgentWithActivity(executor, input.address);
      if (!full) throw new AgentNotFoundError(input.address);
      return toAgent(full, await identityOf(input.address, executor));
    },

    /** Changes a registered agent's owner; the time of the change feeds ownershipStability. `executor` and `afterCommit` as for `register`. */
    async setOwner(
      actor: Actor,
      address: string,
      owner: string,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ): Promise<Agent> {
      const now = clock();
      const changed = await inTransaction(db, executor, async (trx) => {
        const row = await requireOwned(actor, address, trx);
        const changed = await repo.changeOwner(trx, address, owner, now);
        if (changed)
          await audit.append(
            trx,
            inOwnersLog(actor, row),
            'agent.owner_changed',
            address,
            { from: changed.previous, to: owner },
            now,
          );
        return changed !== undefined;
      });
      if (changed) {
        // Whether a spend is allowed, and the owner a decision screens, may have changed.
        afterCommit(() => {
          cache?.invalidate('budgets', address);
          cache?.invalidate('agents', address);
        });
      }
      const full = await repo.findAgentWithActivity(executor, address);
      if (!full) throw new AgentNotFoundError(address);
      return toAgent(full, await identityOf(address, executor));
    },

    /** `executor` and `afterCommit` as for `register`. */
    async setScore(
      actor: Actor,
      address: string,
      input: SetScoreInput,
      executor: Kysely<DB> = db,
      afterCommit: (effect: () => void) => void = (effect) => effect(),
    ) {
      const now = clock();
      const run = async (trx: Kysely<DB>) => {
        const row = await requireOwned(actor, address, trx);
        const written = await repo.writeScore(trx, {
          address,
          score: input.score,
          source: 'manual',
          reason: input.reason,
          now,
          organizationId: actor.organizationId,
          actorKeyId: actor.keyId,
          events: events?.stamp(now),
        });
        if (!written) throw new Error(`score write for ${address} matched no row`);
        await audit.append(
          trx,
          inOwnersLog(actor, row),
          'score.set',
          address,
          { previousScore: written.old_score, score: written.new_score, reason: input.reason },
          now,
        );
        return written;
      };
      const written = await inTransaction(db, executor, run);
      afterCommit(() => {
        // Read your own write: this process's cached score goes before the answer does.
        cache?.invalidate('agents', address);
        if (written.old_score !== written.new_score) events?.committed();
      });
      return {
        address,
        previousScore: written.old_score,
        score: written.new_score,
        grade: gradeFor(written.new_score),
        color: colorFor(written.new_score),
        reason: input.reason,
        updatedAt: toUnixSeconds(now),
      };
    },

    /** The score's history: every change with its source and reason, newest first, paginated. */
    async scoreHistory(address: string, query: ScoreHistoryQuery) {
      await requireKnown(address);
      const before = query.cursor === undefined ? null : idFromCursor(query.cursor);
      const rows = await repo.listScoreEvents(db, address, query.limit, before);
      const { items, nextCursor } = page(rows, query.limit);
      return {
        address,
        events: items.map((row) => ({
          previousScore: row.old_score,
          score: row.new_score,
          source: row.source,
          reason: row.reason,
          changedAt: toUnixSeconds(row.created_at),
        })),
        nextCursor,
      };
    },

    async list(query: ListQuery) {
      let minScore = query.minScore ?? 0;
      let maxScore = query.maxScore ?? 1000;
      if (query.grade) {
        const range = gradeRange(query.grade as Grade);
        minScore = Math.max(minScore, range.min);
        maxScore = Math.min(maxScore, range.max);
      }
      const after = query.cursor === undefined ? null : listPosition(query.cursor, query.sort);
      const { rows, total } = await repo.listAgents(
        db,
        { minScore, maxScore, registered: query.registered },
        query.sort,
        query.limit,
        after,
      );
      const shown = rows.slice(0, query.limit);
      const last = shown[shown.length - 1];
      const nextCursor =
        rows.length > query.limit && last
          ? listCursor(query.sort, {
              key: query.sort === 'recent' ? last.updated_at.getTime() : last.score,
              address: last.address,
            })
          : null;
      return {
        agents: shown.map((row) => ({
          address: row.address,
          score: row.score,
          grade: gradeFor(row.score),
          isRegistered: row.is_registered,
        })),
        total,
        nextCursor,
      };
    },
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
