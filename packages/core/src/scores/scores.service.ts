import { type DB, isDatabaseUnavailable, type Kysely } from '@vouch/db';
import type { ComputeInput } from '@vouch/schemas';
import { colorFor, gradeFor } from '../agents/agents.model.ts';
import type { AuditService } from '../audit/audit.service.ts';
import { type Adjustment, emptyFeedbackCounts, withAdjustment } from '../erc8004/erc8004.model.ts';
import type { Evidence } from '../erc8004/erc8004.service.ts';
import type { EventsService } from '../events/events.service.ts';
import {
  dropClaim,
  type KeyedJob,
  outcomeValue,
  refusalOutcome,
  storedForJob,
  storeForJob,
  storeRefusal,
} from '../idempotency/idempotency.service.ts';
import type { Actor } from '../shared/actor.ts';
import type { Clock } from '../shared/clock.ts';
import { AgentNotFoundError, DomainError, ForbiddenError } from '../shared/errors.ts';
import type { ScoreBasis } from '../transactions/transactions.model.ts';
import { computeScore, confidenceOf, type ScoreInputs, weiToEther } from './scores.model.ts';
import * as repo from './scores.repository.ts';

export interface BatchEntry {
  address: string;
  score: number;
  reason: string;
}

function inputsFromRow(row: repo.ModelRow, now: Date): ScoreInputs {
  return {
    successRate: row.transaction_count === 0 ? 0 : row.success_count / row.transaction_count,
    volumeEther: weiToEther(BigInt(row.total_volume)),
    transactionCount: row.transaction_count,
    budgetCompliance: row.spend_attempts === 0 ? 1 : row.spends_within / row.spend_attempts,
    accountAgeDays: Math.max(0, Math.floor((now.getTime() - row.first_seen_at.getTime()) / DAY_MS)),
    sanctioned: row.sanctioned,
  };
}

const DAY_MS = 86_400_000;
/** budgetCompliance looks at spend attempts of this many trailing days. */
export const COMPLIANCE_WINDOW_DAYS = 30;

export interface ScoresDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** Score and grade changes are announced (docs/events.md); none without. */
  events?: EventsService | undefined;
  /** Which recorded transactions the model counts (SCORE_TRANSACTIONS); default all. */
  basis?: ScoreBasis;
  /** Whether a chain is configured (recorded transactions are checked); only said in the breakdown. */
  chainConfigured?: boolean;
  /** What the ERC-8004 index says of these agents (feedback weighed into an adjustment); none → no adjustment. */
  evidence?: (addresses: string[], verifiedOnly: boolean) => Promise<Map<string, Evidence>>;
}

const NO_ADJUSTMENT: Adjustment = { adjustment: 0, applied: false, rating: null, weight: 0, confidence: 0 };

/** The breakdown's account of the ERC-8004 evidence, flat. */
function evidenceView(e: Evidence | undefined) {
  const a = e?.adjustment ?? NO_ADJUSTMENT;
  return {
    status: e?.status ?? ('not_configured' as const),
    detail: e?.detail ?? 'ERC-8004 feedback is not read',
    chainId: e?.chainId ?? null,
    indexedToBlock: e?.indexedToBlock ?? null,
    headBlock: e?.headBlock ?? null,
    checkedAt: e?.checkedAt ?? null,
    identity: e?.identity ?? null,
    feedback: e?.feedback ?? emptyFeedbackCounts(),
    rating: a.rating,
    weight: a.weight,
    confidence: a.confidence,
    adjustment: a.adjustment,
    applied: a.applied,
    entries: e?.entries ?? [],
  };
}

/** How the breakdown says what the model counted. */
function countedDetail(basis: ScoreBasis, chainConfigured: boolean): string {
  if (basis === 'verified') return 'only transactions verified on the chain count; the others are left out';
  return chainConfigured
    ? 'every recorded transaction counts as reported, verified on the chain or not (SCORE_TRANSACTIONS=all)'
    : 'every recorded transaction counts as reported: self-reported, no chain is configured to check them';
}

/** Refuses agents registered by another organization than the actor's (the operator may score any). */
function assertAllOwned(actor: Actor, rows: Array<{ address: string; organization_id: string | null }>): void {
  if (actor.operator) return;
  const foreign = rows.filter((r) => r.organization_id !== null && r.organization_id !== actor.organizationId);
  if (foreign.length) {
    throw new ForbiddenError(
      `${foreign.length} agent(s) were registered by another organization, which alone may score them`,
      {
        agents: foreign.map((r) => r.address),
      },
    );
  }
}

const complianceSince = (now: Date) => new Date(now.getTime() - COMPLIANCE_WINDOW_DAYS * DAY_MS);

/** A batch's answer: how many entries, and each agent's score and grade as stored. */
interface BatchAnswer {
  updated: number;
  agents: Array<{ address: string; score: number; grade: string }>;
}

export function createScoresService({
  db,
  clock,
  audit,
  events,
  basis = 'all',
  chainConfigured = false,
  evidence,
}: ScoresDeps) {
  const verifiedOnly = basis === 'verified';
  const evidenceOf = (addresses: string[]) =>
    evidence ? evidence(addresses, verifiedOnly) : Promise.resolve(new Map<string, Evidence>());

  /** The model's row for one agent: its recorded transactions (those counted, and all) and spends. */
  async function rowFor(address: string, now: Date): Promise<repo.ModelRow> {
    const [row] = await repo.modelInputs(db, [address], complianceSince(now), verifiedOnly);
    if (!row) throw new AgentNotFoundError(address);
    return row;
  }

  /** The model's inputs for one agent, read from its recorded transactions and spends. */
  async function inputsFor(address: string): Promise<ScoreInputs & { currentScore: number }> {
    const now = clock();
    const row = await rowFor(address, now);
    return { currentScore: row.score, ...inputsFromRow(row, now) };
  }

  /** The batch's transaction (applyBatch). */
  async function apply(
    entries: BatchEntry[],
    jobId: string,
    actor: Actor,
    keyed: KeyedJob | undefined,
  ): Promise<BatchAnswer> {
    const addresses = entries.map((e) => e.address);
    const answer = await db.transaction().execute(async (trx) => {
      // The key's lock first: a job queued for another request under the key waits here, then
      // finds the answer stored and is refused; this request's job, run again, answers it.
      const stored = keyed ? await storedForJob(trx, actor.organizationId, keyed, clock()) : null;
      if (stored) return { replayed: true, value: outcomeValue(stored) as BatchAnswer };
      await repo.lockJob(trx, jobId);
      if (!(await repo.jobAlreadyApplied(trx, jobId))) {
        const rows = await repo.registrationOf(trx, addresses);
        const registered = new Set(rows.filter((r) => r.is_registered).map((r) => r.address));
        const refused = addresses.filter((a) => !registered.has(a));
        if (refused.length) {
          throw new DomainError('AGENT_NOT_REGISTERED', `${refused.length} agent(s) are not registered`, {
            agents: refused,
          });
        }
        assertAllOwned(actor, rows);
        const now = clock();
        const written = await repo.writeScores(trx, {
          addresses,
          scores: entries.map((e) => e.score),
          reasons: entries.map((e) => e.reason),
          source: 'batch',
          jobId,
          now,
          onlyChanged: false,
          actor: { organizationId: actor.organizationId, keyId: actor.keyId },
          events: events?.stamp(now),
        });
        await audit.append(
          trx,
          actor,
          'score.batch',
          null,
          {
            jobId,
            scores: written.map((w) => ({ agent: w.address, previousScore: w.old_score, score: w.new_score })),
          },
          now,
        );
      }
      // What was stored (a sanctioned agent's score is 0 whatever was asked).
      const current = await repo.currentScores(trx, addresses);
      const value: BatchAnswer = {
        updated: entries.length,
        agents: entries.map((e) => {
          const score = current.get(e.address) ?? e.score;
          return { address: e.address, score, grade: gradeFor(score) };
        }),
      };
      if (keyed)
        await storeForJob(trx, actor.organizationId, keyed, { statusCode: 200, ok: true, data: value }, clock());
      return { replayed: false, value };
    });
    if (!answer.replayed) events?.committed();
    return answer.value;
  }

  return {
    inputsFor,

    /** The model applied to the agent's real data, with each factor's share and what it counted. */
    async breakdown(address: string) {
      const now = clock();
      const row = await rowFor(address, now);
      const { score: modelScore, factors } = computeScore(inputsFromRow(row, now));
      const ev = (await evidenceOf([address])).get(address);
      const score = withAdjustment(modelScore, ev?.adjustment ?? NO_ADJUSTMENT, row.sanctioned);
      return {
        agent: address,
        score,
        grade: gradeFor(score),
        color: colorFor(score),
        currentScore: row.score,
        ...confidenceOf(row.transaction_count, row.first_seen_at, now),
        factors,
        counted: {
          basis,
          chainConfigured,
          detail: countedDetail(basis, chainConfigured),
          transactions: row.transaction_count,
          volume: row.total_volume,
          leftOutTransactions: row.recorded_count - row.transaction_count,
          leftOutVolume: (BigInt(row.recorded_volume) - BigInt(row.total_volume)).toString(),
        },
        modelScore,
        erc8004: evidenceView(ev),
      };
    },

    /**
     * Batch scoring must name only registered agents of the actor's organization, each once;
     * checked before a batch is queued (and again when it is applied).
     */
    async assertBatchable(addresses: string[], actor?: Actor): Promise<void> {
      const rows = await repo.registrationOf(db, addresses);
      const known = new Map(rows.map((r) => [r.address, r.is_registered]));
      const missing = addresses.filter((a) => !known.has(a));
      if (missing.length) {
        throw new DomainError('AGENT_NOT_FOUND', `${missing.length} agent(s) are not known`, { agents: missing });
      }
      if (actor) assertAllOwned(actor, rows);
      const observed = addresses.filter((a) => known.get(a) === false);
      if (observed.length) {
        throw new DomainError('AGENT_NOT_REGISTERED', `${observed.length} agent(s) are not registered`, {
          agents: observed,
        });
      }
    },

    /**
     * Applies a batch atomically: every score and its history row, or nothing. A
     * redelivered job (same id), even one run at the same time, finds its rows and answers
     * without writing again. Under an Idempotency-Key (`keyed`) the answer is stored under the
     * key in the same transaction, a refusal in one of its own; an answer stored already is
     * answered again, and nothing is written.
     */
    async applyBatch(
      entries: BatchEntry[],
      jobId: string,
      actor: Actor,
      keyed?: KeyedJob,
      run: { lastAttempt?: boolean } = {},
    ): Promise<BatchAnswer> {
      try {
        return await apply(entries, jobId, actor, keyed);
      } catch (error) {
        const refused = keyed && refusalOutcome(error);
        if (keyed && refused) await storeRefusal(db, actor.organizationId, keyed, refused, clock());
        // Failed for good, no answer: the claim is given up (docs/api.md), also when the request
        // was answered 202 and nobody waits to give it up.
        // A database that is away is waited for without spending an attempt (docs/jobs.md): the
        // job is not over, and keeps its claim.
        else if (keyed && run.lastAttempt && !isDatabaseUnavailable(error))
          await dropClaim(db, actor.organizationId, keyed).catch(() => {});
        throw error;
      }
    },

    /**
     * Runs the model over the agents' data and stores every score that changed, in one
     * transaction. With `keepOverrides` (the refresh after a recorded transaction), an agent whose
     * score a client set last (manual or batch) keeps it: such a score holds until an explicit
     * recomputation (`POST /api/scores/recompute`) or the next client write.
     */
    async recompute(addresses: string[], jobId: string | null, options: { keepOverrides?: boolean } = {}) {
      const now = clock();
      // Read before the transaction: the embedded database has one connection.
      const evidenceByAgent = await evidenceOf(addresses);
      const result = await db.transaction().execute(async (trx) => {
        // Before anything is read: a client's score committed after this waits, and holds.
        await repo.lockAgents(trx, addresses);
        if (options.keepOverrides) {
          const kept = await repo.overridden(trx, addresses);
          if (kept.size) addresses = addresses.filter((a) => !kept.has(a));
          if (addresses.length === 0) return { scored: 0, updated: 0 };
        }
        await repo.planForKeyLookups(trx, addresses.length);
        const rows = await repo.modelInputs(trx, addresses, complianceSince(now), verifiedOnly);
        const scores = rows.map((row) =>
          withAdjustment(
            computeScore(inputsFromRow(row, now)).score,
            evidenceByAgent.get(row.address)?.adjustment ?? NO_ADJUSTMENT,
            row.sanctioned,
          ),
        );
        const changed = await repo.writeScores(trx, {
          addresses: rows.map((r) => r.address),
          scores,
          reasons: rows.map(() => null),
          source: 'model',
          jobId,
          now,
          onlyChanged: true,
          events: events?.stamp(now),
        });
        return { scored: rows.length, updated: changed.length };
      });
      if (result.updated > 0) events?.committed();
      return result;
    },

    /** Every known agent's address, in a stable order (for a full recomputation). */
    allAddresses: () => repo.allAddresses(db),

    /** Stateless: the model over caller-supplied data. */
    compute(input: ComputeInput) {
      const { score, factors } = computeScore({
        successRate: input.successRate,
        volumeEther: weiToEther(BigInt(input.totalVolume)),
        transactionCount: input.transactionCount,
        budgetCompliance: input.budgetCompliance,
        accountAgeDays: input.accountAge,
      });
      return { score, grade: gradeFor(score), color: colorFor(score), factors };
    },
  };
}

export type ScoresService = ReturnType<typeof createScoresService>;
