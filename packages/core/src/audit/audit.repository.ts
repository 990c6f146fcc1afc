import { type AuditActor, type DB, type Kysely, type RawBuilder, sql } from '@vouch/db';

type Executor = Kysely<DB>;

/** Who acted and when, as the audit log stores it. */
export interface AuditMeta {
  organizationId: string;
  actor: AuditActor;
  actorKeyId: string | null;
  requestId: string | null;
  at: Date;
}

/** An entry's parts as SQL expressions, so a statement can log values it computes itself (a spend's outcome, its id). */
export interface AuditParts {
  action: RawBuilder<unknown>;
  target: RawBuilder<unknown>;
  details: RawBuilder<unknown>;
}

const text = (value: string | null) => sql`${value}::text`;

/** The parts of an entry whose values are all known before the statement. */
export function knownParts(action: string, target: string | null, details: Record<string, unknown>): AuditParts {
  return { action: text(action), target: text(target), details: sql`${JSON.stringify(details)}::jsonb` };
}

/**
 * Common table expressions that append one entry per row of `source` to the organization's
 * chain: `audit_entry` builds the entry's JSON text (from `parts`, which may name the source's
 * columns), `audit_head` moves the organization's head on by one — the row lock it takes
 * orders concurrent appends — and `audit` inserts the entry. A statement that includes them
 * logs exactly when it acts, in the same transaction. The head is always the last row a
 * transaction locks (deadlock-free with the budget and key rows locked before it).
 */
export function auditCtes(meta: AuditMeta, parts: AuditParts, source: RawBuilder<unknown>): RawBuilder<unknown> {
  const entry = sql`jsonb_build_object(
      'organizationId', ${text(meta.organizationId)}, 'action', ${parts.action}, 'actor', ${text(meta.actor)},
      'actorKeyId', ${text(meta.actorKeyId)}, 'target', ${parts.target}, 'requestId', ${text(meta.requestId)},
      'at', ${text(meta.at.toISOString())}, 'details', ${parts.details})::text`;
  return sql`audit_entry AS (
      SELECT ${parts.action} AS action, ${parts.target} AS target, ${entry} AS entry FROM ${source}
    ), audit_head AS (
      UPDATE audit_heads AS h SET
        seq = h.seq + 1,
        prev_hash = h.hash,
        hash = encode(sha256(convert_to(h.hash || E'\\n' || (h.seq + 1)::text || E'\\n' || e.entry, 'UTF8')), 'hex')
      FROM audit_entry AS e
      WHERE h.organization_id = ${meta.organizationId}
      RETURNING h.seq, h.prev_hash, h.hash, e.action, e.target, e.entry
    ), audit AS (
      INSERT INTO audit_log (organization_id, seq, action, actor, actor_key_id, target, request_id, created_at, entry, prev_hash, hash)
      SELECT ${meta.organizationId}, seq, action, ${meta.actor}, ${meta.actorKeyId}, target, ${meta.requestId}, ${meta.at},
        entry, prev_hash, hash
      FROM audit_head
      RETURNING seq
    )`;
}

/** Appends one entry whose parts are all known; run it inside the transaction of the change it logs. */
export async function appendEntry(
  db: Executor,
  meta: AuditMeta,
  action: string,
  target: string | null,
  details: Record<string, unknown>,
): Promise<void> {
  const ctes = auditCtes(meta, knownParts(action, target, details), sql`(SELECT 1) AS one`);
  const result = await sql<{ seq: string }>`WITH ${ctes} SELECT seq::text FROM audit`.execute(db);
  if (result.rows.length !== 1) throw new Error(`organization ${meta.organizationId} has no audit head`);
}

/** A new organization's chain starts at the genesis hash. */
export async function createHead(db: Executor, organizationId: string, genesis: string): Promise<void> {
  await db
    .insertInto('audit_heads')
    .values({ organization_id: organizationId, seq: 0, prev_hash: genesis, hash: genesis })
    .execute();
}

export interface AuditFilter {
  organizationId: string;
  action?: string | undefined;
  target?: string | undefined;
  actorKeyId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  /** Entries numbered below this (newest first). */
  beforeSeq?: string | undefined;
}

const columns = [
  'organization_id',
  'action',
  'actor',
  'actor_key_id',
  'target',
  'request_id',
  'created_at',
  'entry',
  'prev_hash',
  'hash',
] as const;

/** A page of entries, newest first; `limit + 1` rows tell whether there is a next page. */
export function listEntries(db: Executor, filter: AuditFilter, limit: number) {
  let query = db
    .selectFrom('audit_log')
    .select(columns)
    .select(sql<string>`seq::text`.as('seq'))
    .where('organization_id', '=', filter.organizationId);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.target) query = query.where('target', '=', filter.target);
  if (filter.actorKeyId) query = query.where('actor_key_id', '=', filter.actorKeyId);
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  if (filter.beforeSeq) query = query.where('seq', '<', filter.beforeSeq);
  return query
    .orderBy('audit_log.seq', 'desc')
    .limit(limit + 1)
    .execute();
}

/** Entries of one organization in chain order after `afterSeq`, `limit` at a time (verification, export). */
export function chainPage(db: Executor, organizationId: string, afterSeq: string, limit: number) {
  return db
    .selectFrom('audit_log')
    .select(columns)
    .select(sql<string>`seq::text`.as('seq'))
    .where('organization_id', '=', organizationId)
    .where('seq', '>', afterSeq)
    .orderBy('audit_log.seq', 'asc')
    .limit(limit)
    .execute();
}

/**
 * Every organization that has a chain or could have one (or the one named), with the head that
 * records its last entry, if any: the organizations, and whatever the log or the heads name
 * besides, so that a chain whose head was removed is still walked.
 */
export async function chains(db: Executor, organizationId?: string) {
  const named = organizationId ?? null;
  const { rows } = await sql<{ organization_id: string; seq: string | null; hash: string | null }>`
    SELECT o.id AS organization_id, h.seq::text AS seq, h.hash
    FROM (
      SELECT id FROM organizations UNION SELECT organization_id FROM audit_log UNION SELECT organization_id FROM audit_heads
    ) AS o (id)
    LEFT JOIN audit_heads h ON h.organization_id = o.id
    WHERE ${named}::text IS NULL OR o.id = ${named}
    ORDER BY o.id`.execute(db);
  return rows;
}
