import { type AgentRow, type DB, type Kysely, sql } from '@vouch/db';
import type { SortOrder } from '@vouch/schemas';
import { sanctionedSql } from '../sanctions/sanctions.repository.ts';
import { scoreEventCtes } from '../scores/scores.repository.ts';
import { nativeAmount } from '../transactions/transactions.repository.ts';

type Executor = Kysely<DB>;

export function findAgent(db: Executor, address: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('address', '=', address).executeTakeFirst();
}

/** What a score answer needs: the score, and what its confidence rests on (the transactions the model counts, the age). */
export interface Standing {
  score: number;
  evidence: number;
  firstSeenAt: Date;
  isRegistered: boolean;
  owner: string | null;
}

/** The agent's standing, in one statement; `verifiedOnly`: count only transactions verified on the chain. */
export async function findStanding(
  db: Executor,
  address: string,
  verifiedOnly: boolean,
): Promise<Standing | undefined> {
  const counted = verifiedOnly ? sql`AND t.chain_status = 'verified'` : sql``;
  const result = await sql<{
    score: number;
    evidence: number;
    first_seen_at: Date;
    is_registered: boolean;
    owner: string | null;
  }>`
    SELECT a.score, a.first_seen_at, a.is_registered, a.owner,
      (SELECT count(*)::int FROM transactions t WHERE t.agent = a.address ${counted}) AS evidence
    FROM agents a WHERE a.address = ${address}`.execute(db);
  const row = result.rows[0];
  return (
    row && {
      score: row.score,
      evidence: row.evidence,
      firstSeenAt: new Date(row.first_seen_at),
      isRegistered: row.is_registered,
      owner: row.owner,
    }
  );
}

/** The agent with its transaction aggregates, in one round trip. */
export function findAgentWithActivity(db: Executor, address: string) {
  return db
    .selectFrom('agents')
    .selectAll('agents')
    .select((eb) => [
      eb
        .selectFrom('transactions')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('transactions.agent', '=', 'agents.address')
        .as('transaction_count'),
      eb
        .selectFrom('transactions')
        // Volume is in the native unit (wei): amounts of other assets are not comparable with it.
        .select(sql<string>`coalesce(sum(amount) FILTER (WHERE ${nativeAmount}), 0)::text`.as('v'))
        .whereRef('transactions.agent', '=', 'agents.address')
        .as('total_volume'),
    ])
    .where('address', '=', address)
    .executeTakeFirst();
}

export interface RegisterValues {
  address: string;
  organizationId: string;
  owner: string | null;
  metadata: Record<string, unknown> | null;
  now: Date;
}

/**
 * Registers a new agent or promotes an observed one, in one statement. Returns
 * nothing when the agent was already registered.
 */
export function registerAgent(db: Executor, v: RegisterValues): Promise<AgentRow | undefined> {
  const metadata = v.metadata === null ? null : JSON.stringify(v.metadata);
  return db
    .insertInto('agents')
    .values({
      address: v.address,
      is_registered: true,
      organization_id: v.organizationId,
      owner: v.owner,
      // The first owner is not a change of ownership.
      owner_changed_at: null,
      metadata,
      score: 0,
      first_seen_at: v.now,
      registered_at: v.now,
      updated_at: v.now,
    })
    .onConflict((oc) =>
      oc
        .column('address')
        .doUpdateSet({
          is_registered: true,
          organization_id: v.organizationId,
          registered_at: v.now,
          owner: v.owner,
          owner_changed_at: null,
          metadata,
          updated_at: v.now,
        })
        .where('agents.is_registered', '=', false),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Makes an address known as observed (unregistered) if it is not known yet. */
export async function ensureObserved(db: Executor, address: string, now: Date): Promise<void> {
  await db
    .insertInto('agents')
    .values({ address, is_registered: false, score: 0, first_seen_at: now, updated_at: now })
    .onConflict((oc) => oc.column('address').doNothing())
    .execute();
}

/**
 * Records a new owner and when it changed; nothing when the owner is the same. Returns the owner it
 * replaced, read under the row's lock (a change committed meanwhile is the one replaced), or
 * nothing when it did not change.
 */
export async function changeOwner(
  db: Executor,
  address: string,
  owner: string,
  now: Date,
): Promise<{ previous: string | null } | undefined> {
  const result = await sql<{ previous: string | null }>`
    WITH old AS (
      SELECT address, owner FROM agents WHERE address = ${address} AND is_registered FOR NO KEY UPDATE
    ), changed AS (
      UPDATE agents AS a SET owner = ${owner}, owner_changed_at = ${now}, updated_at = ${now}
      FROM old WHERE a.address = old.address AND old.owner IS DISTINCT FROM ${owner}
      RETURNING old.owner AS previous
    )
    -- A cached budget row carries whether the agent or its owner is sanctioned: drop it at commit.
    SELECT previous, pg_notify('vouch_cache', ${`budgets:${address}`}) FROM changed`.execute(db);
  const row = result.rows[0];
  return row && { previous: row.previous };
}

export async function touchAgent(db: Executor, address: string, now: Date): Promise<void> {
  await db.updateTable('agents').set({ updated_at: now }).where('address', '=', address).execute();
}

/**
 * Writes a new score and its history row in one statement. Only registered agents
 * take score writes; returns nothing otherwise.
 */
export async function writeScore(
  db: Executor,
  v: {
    address: string;
    score: number;
    source: 'manual' | 'batch' | 'model';
    reason: string | null;
    now: Date;
    organizationId: string | null;
    actorKeyId: string | null;
    /** When the score's events are written (scoreEventCtes); null or absent: none. */
    events?: Date | null | undefined;
  },
): Promise<{ old_score: number; new_score: number } | undefined> {
  const result = await sql<{ old_score: number; new_score: number }>`
    WITH old AS (
      SELECT address, score FROM agents WHERE address = ${v.address} AND is_registered FOR NO KEY UPDATE
    ), changed AS (
      -- A sanctioned agent scores 0 whatever is asked.
      UPDATE agents SET score = CASE WHEN ${sanctionedSql('agents.address')} THEN 0 ELSE ${v.score}::int END,
        updated_at = ${v.now}
      FROM old WHERE agents.address = old.address
      RETURNING agents.address, old.score AS old_score, agents.score AS new_score, ${v.reason}::text AS reason
    ), history AS (
      INSERT INTO score_events (agent, old_score, new_score, source, reason, created_at, organization_id, actor_key_id)
      SELECT address, old_score, new_score, ${v.source}, reason, ${v.now}, ${v.organizationId}, ${v.actorKeyId}
      FROM changed
      RETURNING old_score, new_score
    ), ${scoreEventCtes(v.events ?? null, v.source)}
    SELECT old_score, new_score FROM history`.execute(db);
  return result.rows[0];
}

export interface ListFilter {
  minScore: number;
  maxScore: number;
  registered?: boolean | undefined;
}

export interface ListCursor {
  /** score, or updated_at in epoch milliseconds for `recent`. */
  key: number;
  address: string;
}

export async function listAgents(
  db: Executor,
  filter: ListFilter,
  sort: SortOrder,
  limit: number,
  after: ListCursor | null,
) {
  let query = db
    .selectFrom('agents')
    .select(['address', 'score', 'is_registered', 'updated_at'])
    .where('score', '>=', filter.minScore)
    .where('score', '<=', filter.maxScore);
  if (filter.registered !== undefined) query = query.where('is_registered', '=', filter.registered);
  let counted = db
    .selectFrom('agents')
    .select(sql<number>`count(*)::int`.as('total'))
    .where('score', '>=', filter.minScore)
    .where('score', '<=', filter.maxScore);
  if (filter.registered !== undefined) counted = counted.where('is_registered', '=', filter.registered);

  if (after) {
    const { key, address } = after;
    if (sort === 'score_desc') {
      query = query.where((eb) =>
        eb.or([eb('score', '<', key), eb.and([eb('score', '=', key), eb('address', '>', address)])]),
      );
    } else if (sort === 'score_asc') {
      query = query.where((eb) =>
        eb.or([eb('score', '>', key), eb.and([eb('score', '=', key), eb('address', '>', address)])]),
      );
    } else {
      const at = new Date(key);
      query = query.where((eb) =>
        eb.or([eb('updated_at', '<', at), eb.and([eb('updated_at', '=', at), eb('address', '>', address)])]),
      );
    }
  }
  if (sort === 'score_desc') query = query.orderBy('score', 'desc');
  else if (sort === 'score_asc') query = query.orderBy('score', 'asc');
  else query = query.orderBy('updated_at', 'desc');
  query = query.orderBy('address', 'asc').limit(limit + 1);

  const [rows, total] = await Promise.all([query.execute(), counted.executeTakeFirstOrThrow()]);
  return { rows, total: total.total };
}

/** An agent's score changes, newest first, after the event `beforeId` when given; one more than `limit` tells there is a next page. */
export async function listScoreEvents(db: Executor, address: string, limit: number, beforeId: string | null) {
  let query = db
    .selectFrom('score_events')
    .select([sql<string>`id::text`.as('id'), 'old_score', 'new_score', 'source', 'reason', 'created_at'])
    .where('agent', '=', address);
  if (beforeId !== null) query = query.where('id', '<', beforeId);
  return query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
