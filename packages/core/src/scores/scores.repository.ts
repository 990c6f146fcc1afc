import { type DB, type Kysely, sql } from '@vouch/db';
import { paymentScreening } from '@vouch/schemas';
import { agentEventCtes } from '../events/events.repository.ts';
import { sanctionedSql } from '../sanctions/sanctions.repository.ts';
import { nativeAmount } from '../transactions/transactions.repository.ts';

type Executor = Kysely<DB>;

export interface ModelRow {
  address: string;
  score: number;
  first_seen_at: Date;
  /** Transactions the model counts (all, or only those verified on the chain) and their figures. */
  transaction_count: number;
  success_count: number;
  total_volume: string;
  /** Every recorded transaction, counted or not. */
  recorded_count: number;
  recorded_volume: string;
  spend_attempts: number;
  spends_within: number;
  sanctioned: boolean;
}

/** Batches up to this size are a small part of the table: their statements look agents up by key. */
export const KEY_LOOKUP_BATCH_MAX = 1000;

/** The reasons the sanctions screen refuses a payment for, before its amount meets any limit. */
const screeningRefusals: string[] = paymentScreening.unwrap().options;

/**
 * For the rest of the transaction, plans the statements below as lookups by key when the
 * batch is small (a recomputation chunk: 250 agents). At PostgreSQL's default
 * random_page_cost (4, a disk that seeks) the planner read all 10,000 agents (twice) and
 * every transaction for each such chunk of a seeded table, so a chunk's cost grew with the
 * whole table; with 1.1, the usual setting for data in memory or on SSDs, it uses the keys.
 * A recomputation of those 10,000 agents, four chunks at a time in one process, took
 * 705–757 ms in six runs, against 863–933 ms in five of six without it (the sixth: 724 ms).
 * A batch of the whole table keeps the default plans.
 */
export async function planForKeyLookups(trx: Executor, batchSize: number): Promise<void> {
  if (batchSize <= KEY_LOOKUP_BATCH_MAX) await sql`SET LOCAL random_page_cost = 1.1`.execute(trx);
}

/**
 * What the score model reads, for many agents in one statement. With `verifiedOnly` the
 * transaction figures count only transactions verified on the chain; `recorded_*` count them all.
 */
export async function modelInputs(
  db: Executor,
  addresses: string[],
  since: Date,
  verifiedOnly: boolean,
): Promise<ModelRow[]> {
  const counted = verifiedOnly ? sql`chain_status = 'verified'` : sql`true`;
  const result = await sql<ModelRow>`
    SELECT a.address, a.score, a.first_seen_at,
           coalesce(t.transaction_count, 0) AS transaction_count,
           coalesce(t.success_count, 0) AS success_count,
           coalesce(t.total_volume, '0') AS total_volume,
           coalesce(t.recorded_count, 0) AS recorded_count,
           coalesce(t.recorded_volume, '0') AS recorded_volume,
           coalesce(s.spend_attempts, 0) AS spend_attempts,
           coalesce(s.spends_within, 0) AS spends_within,
           ${sanctionedSql('a.address')} AS sanctioned
    FROM agents a
    LEFT JOIN (
      SELECT agent, (count(*) FILTER (WHERE ${counted}))::int AS transaction_count,
             (count(*) FILTER (WHERE success AND ${counted}))::int AS success_count,
             coalesce(sum(amount) FILTER (WHERE ${counted} AND ${nativeAmount}), 0)::text AS total_volume,
             count(*)::int AS recorded_count,
             coalesce(sum(amount) FILTER (WHERE ${nativeAmount}), 0)::text AS recorded_volume
      FROM transactions WHERE agent = ANY(${addresses}::text[]) GROUP BY agent
    ) t ON t.agent = a.address
    LEFT JOIN (
      -- The owner organization's spends only: the score is everyone's, and only its owner shapes
      -- it (docs/tenancy.md); another organization's refused spends would lower it for all. And
      -- only those judged against the budget: one the sanctions screen refused was refused before
      -- any limit was looked at (with no list active, every one is), whatever its amount.
      SELECT sp.agent, count(*)::int AS spend_attempts, (count(*) FILTER (WHERE sp.accepted))::int AS spends_within
      FROM spends sp JOIN agents o ON o.address = sp.agent AND o.organization_id = sp.organization_id
      WHERE sp.agent = ANY(${addresses}::text[]) AND sp.created_at >= ${since}
        AND (sp.accepted OR sp.reason <> ALL(${screeningRefusals}::text[]))
      GROUP BY sp.agent
    ) s ON s.agent = a.address
    WHERE a.address = ANY(${addresses}::text[])`.execute(db);
  return result.rows;
}

/**
 * The events of score writes, for a statement whose CTE `changed` has the columns `address`,
 * `old_score`, `new_score` and `reason`: `score.changed` for every score that moved and
 * `grade.changed` when its grade moved too, to every organization that hears of the agent.
 * With `at` null (events off) nothing is written.
 */
export function scoreEventCtes(at: Date | null, source: 'manual' | 'batch' | 'model') {
  return agentEventCtes(
    at,
    'score_changes',
    {
      type: sql`x.type`,
      agent: sql`changed.address`,
      data: sql`x.data`,
      where: sql`changed.old_score <> changed.new_score
        AND (x.type = 'score.changed' OR vouch_grade(changed.old_score) <> vouch_grade(changed.new_score))`,
    },
    sql`changed CROSS JOIN LATERAL (VALUES
        ('score.changed', jsonb_build_object('previousScore', changed.old_score, 'score', changed.new_score,
          'source', ${source}::text, 'reason', changed.reason)),
        ('grade.changed', jsonb_build_object('previousGrade', vouch_grade(changed.old_score),
          'grade', vouch_grade(changed.new_score), 'previousScore', changed.old_score, 'score', changed.new_score,
          'source', ${source}::text))
      ) AS x(type, data)`,
  );
}

/**
 * Writes new scores for many agents with one history row per actual change, in one
 * statement. Agents whose score is already the target are left alone, which makes a
 * redelivered job harmless. `registeredOnly` restricts writes to registered agents.
 * With `events` (a time), the statement also announces every score and grade that moved
 * (`scoreEventCtes`), still set-based: one insert for the whole batch.
 */
export async function writeScores(
  db: Executor,
  v: {
    addresses: string[];
    scores: number[];
    reasons: Array<string | null>;
    source: 'manual' | 'batch' | 'model';
    jobId: string | null;
    now: Date;
    onlyChanged: boolean;
    /** Who wrote the scores (manual and batch); none for the model. */
    actor?: { organizationId: string; keyId: string | null };
    /** When the score events are written; null or absent: none. */
    events?: Date | null | undefined;
  },
): Promise<Array<{ address: string; old_score: number; new_score: number }>> {
  const result = await sql<{ address: string; old_score: number; new_score: number }>`
    WITH v AS (
      SELECT * FROM unnest(${v.addresses}::text[], ${v.scores}::int[], ${v.reasons}::text[]) AS v(address, score, reason)
    ), old AS (
      SELECT a.address, a.score FROM agents a JOIN v ON v.address = a.address
      WHERE ${v.onlyChanged ? sql`a.score <> v.score` : sql`true`}
      ORDER BY a.address
      -- NO KEY UPDATE, as lockAgents takes: FOR UPDATE would also wait for a transaction being
      -- recorded (its reference to the agent holds KEY SHARE) while holding what that
      -- transaction's touch of the agent waits for, a deadlock.
      FOR NO KEY UPDATE OF a
    ), changed AS (
      -- A sanctioned agent scores 0 whatever is asked.
      UPDATE agents a SET score = CASE WHEN ${sanctionedSql('a.address')} THEN 0 ELSE v.score END, updated_at = ${v.now}
      FROM v JOIN old ON old.address = v.address
      WHERE a.address = v.address
      RETURNING a.address, old.score AS old_score, a.score AS new_score, v.reason
    ), history AS (
      INSERT INTO score_events (agent, old_score, new_score, source, reason, created_at, job_id, organization_id, actor_key_id)
      SELECT address, old_score, new_score, ${v.source}, reason, ${v.now}, ${v.jobId},
        ${v.actor?.organizationId ?? null}::text, ${v.actor?.keyId ?? null}::text FROM changed
      RETURNING agent AS address, old_score, new_score
    ), ${scoreEventCtes(v.events ?? null, v.source)}
    SELECT address, old_score, new_score FROM history`.execute(db);
  return result.rows;
}

/**
 * Takes the agents' rows for a score computation until its transaction ends, in address order (as
 * `writeScores` does): a client's score written meanwhile waits for it and lands after it, instead
 * of being read as not set and then written over. `NO KEY UPDATE`: rows that refer to the agents
 * (a recorded transaction) are not held up.
 */
export async function lockAgents(db: Executor, addresses: string[]): Promise<void> {
  await sql`SELECT address FROM agents WHERE address = ANY(${addresses}::text[]) ORDER BY address FOR NO KEY UPDATE`.execute(
    db,
  );
}

/** One delivery of a batch job at a time: a second, run at once (a stalled worker's), waits and finds it applied. */
export async function lockJob(db: Executor, jobId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(740014, hashtext(${jobId}))`.execute(db);
}

export async function jobAlreadyApplied(db: Executor, jobId: string): Promise<boolean> {
  const row = await db.selectFrom('score_events').select('id').where('job_id', '=', jobId).limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function currentScores(db: Executor, addresses: string[]): Promise<Map<string, number>> {
  const rows = await db.selectFrom('agents').select(['address', 'score']).where('address', 'in', addresses).execute();
  return new Map(rows.map((r) => [r.address, r.score]));
}

export function registrationOf(db: Executor, addresses: string[]) {
  return db
    .selectFrom('agents')
    .select(['address', 'is_registered', 'score', 'organization_id'])
    .where('address', 'in', addresses)
    .execute();
}

export async function allAddresses(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('agents').select('address').orderBy('address').execute();
  return rows.map((r) => r.address);
}

/** Agents among these whose latest score change was written by a client (manual or batch), not the model. */
export async function overridden(db: Executor, addresses: string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const rows = await sql<{ agent: string }>`
    SELECT agent FROM (
      SELECT DISTINCT ON (agent) agent, source FROM score_events
      WHERE agent = ANY(${addresses}::text[]) ORDER BY agent, id DESC
    ) latest WHERE source <> 'model'`.execute(db);
  return new Set(rows.rows.map((r) => r.agent));
}
