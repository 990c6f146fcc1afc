import type { DB, Kysely } from '@vouch/db';
import type { Policy, PolicyInput, PolicyRule } from '@vouch/schemas';
import { findAgent } from '../agents/agents.repository.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { ReadCache } from '../cache/read-cache.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { cursorNotIssued, idFromCursor, page } from '../shared/cursor.ts';
import { AgentNotFoundError, DomainError } from '../shared/errors.ts';
import * as repo from './policies.repository.ts';

/** The largest policy version: the column is an integer. */
const MAX_VERSION = 2_147_483_647;

export interface PoliciesDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  cache?: ReadCache | undefined;
}

/** The rule set a decision applies, and where it came from. */
export interface EffectivePolicy {
  /** The agent whose policy it is, or null for the organization's default. */
  agent: string | null;
  version: number;
  rules: PolicyRule[];
}

/** A write that named the version it was made from, which is no longer the latest. */
export class PolicyVersionConflictError extends DomainError {
  constructor(agent: string | null, expectedVersion: number, currentVersion: number) {
    super(
      'POLICY_VERSION_CONFLICT',
      `${agent ? `agent ${agent}'s policy` : 'the default policy'} is at version ${currentVersion}, not ${expectedVersion}`,
      { expectedVersion, currentVersion },
    );
  }
}

export class PolicyNotFoundError extends DomainError {
  constructor(agent: string | null, version?: number) {
    super(
      'POLICY_NOT_FOUND',
      `${agent ? `agent ${agent} has no policy` : 'the organization has no default policy'}${
        version === undefined ? '' : ` version ${version}`
      }`,
    );
  }
}

function toPolicy(row: repo.PolicyRow): Policy {
  return {
    agent: row.agent === repo.DEFAULT_POLICY_AGENT ? null : row.agent,
    version: row.version,
    rules: (row.rules as PolicyRule[] | null) ?? null,
    createdAt: toUnixSeconds(row.created_at),
    actorKeyId: row.actor_key_id,
  };
}

const slot = (organizationId: string, agent: string) => `${organizationId}/${agent}`;

export function createPoliciesService({ db, clock, audit, cache }: PoliciesDeps) {
  /** The current rule set stored under `agent` ('' for the default), through the read cache. */
  async function current(
    organizationId: string,
    agent: string,
    executor: Kysely<DB> = db,
  ): Promise<EffectivePolicy | null> {
    const load = async () => {
      const row = await repo.latestPolicy(executor, organizationId, agent);
      if (!row || row.rules === null) return null;
      return {
        agent: agent === repo.DEFAULT_POLICY_AGENT ? null : agent,
        version: row.version,
        rules: row.rules as PolicyRule[],
      };
    };
    return cache && executor === db ? cache.read('policies', slot(organizationId, agent), load) : load();
  }

  async function requireAgent(agent: string | null) {
    if (agent !== null && !(await findAgent(db, agent))) throw new AgentNotFoundError(agent);
  }

  /**
   * Writes the next version; concurrent writers of the same policy wait their turn for a number.
   * Under that lock, a deletion (`rules` null) finds the policy there, or two at once would both
   * delete it, and a write that names `expectedVersion` finds it the latest.
   */
  async function write(
    actor: Actor,
    agent: string | null,
    rules: PolicyRule[] | null,
    expectedVersion?: number,
  ): Promise<repo.PolicyRow> {
    const stored = agent ?? repo.DEFAULT_POLICY_AGENT;
    const now = clock();
    const row = await db.transaction().execute(async (trx) => {
      await repo.lockPolicy(trx, actor.organizationId, stored);
      if (rules === null || expectedVersion !== undefined) {
        const latest = await repo.latestPolicy(trx, actor.organizationId, stored);
        if (rules === null && (!latest || latest.rules === null)) throw new PolicyNotFoundError(agent);
        const current = latest?.version ?? 0;
        if (expectedVersion !== undefined && expectedVersion !== current)
          throw new PolicyVersionConflictError(agent, expectedVersion, current);
      }
      const row = await repo.insertVersion(trx, {
        organizationId: actor.organizationId,
        agent: stored,
        rules,
        actorKeyId: actor.keyId,
        now,
      });
      await audit.append(
        trx,
        actor,
        rules === null ? 'policy.deleted' : 'policy.set',
        agent,
        { version: row.version, default: agent === null, rules },
        now,
      );
      return row;
    });
    cache?.invalidate('policies', slot(actor.organizationId, stored));
    return row;
  }

  return {
    /**
     * The policy a decision for `agent` applies in the organization: the agent's own, else the
     * organization's default, else none.
     */
    async effective(organizationId: string, agent: string, executor: Kysely<DB> = db): Promise<EffectivePolicy | null> {
      return (
        (await current(organizationId, agent, executor)) ??
        (await current(organizationId, repo.DEFAULT_POLICY_AGENT, executor))
      );
    },

    /** The current version (or `version`) of the agent's policy (`agent` null: the default policy). */
    async get(actor: Actor, agent: string | null, version?: number): Promise<Policy> {
      await requireAgent(agent);
      const stored = agent ?? repo.DEFAULT_POLICY_AGENT;
      const row =
        version === undefined
          ? await repo.latestPolicy(db, actor.organizationId, stored)
          : await repo.policyVersion(db, actor.organizationId, stored, version);
      // A deleted policy is not found as the current one; an old version reads as it was.
      if (!row || (version === undefined && row.rules === null)) throw new PolicyNotFoundError(agent, version);
      return toPolicy(row);
    },

    /** The versions, newest first, a page at a time. */
    async versions(
      actor: Actor,
      agent: string | null,
      query: { limit: number; cursor?: string | undefined },
    ): Promise<{ versions: Policy[]; nextCursor: string | null }> {
      await requireAgent(agent);
      const before = query.cursor === undefined ? null : Number(idFromCursor(query.cursor));
      // Versions are integers (at most 2^31 - 1): a larger one was never given out as a cursor.
      if (before !== null && before > MAX_VERSION) throw cursorNotIssued();
      const rows = await repo.policyVersions(
        db,
        actor.organizationId,
        agent ?? repo.DEFAULT_POLICY_AGENT,
        before,
        query.limit + 1,
      );
      const { items, nextCursor } = page(
        rows.map((row) => ({ id: String(row.version), row })),
        query.limit,
      );
      return { versions: items.map((item) => toPolicy(item.row)), nextCursor };
    },

    /** Replaces the rule set: a new version, in the audit log. */
    async put(actor: Actor, agent: string | null, input: PolicyInput): Promise<Policy> {
      await requireAgent(agent);
      return toPolicy(await write(actor, agent, input.rules, input.expectedVersion));
    },

    /** Deletes the policy: a version without rules (the history stays). */
    async remove(actor: Actor, agent: string | null): Promise<Policy> {
      await requireAgent(agent);
      return toPolicy(await write(actor, agent, null));
    },
  };
}

export type PoliciesService = ReturnType<typeof createPoliciesService>;
