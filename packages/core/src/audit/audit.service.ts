import type { DB, Kysely } from '@vouch/db';
import type { AuditEntry, AuditQuery } from '@vouch/schemas';
import { findOrganization } from '../organizations/organizations.repository.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { idFromCursor, page } from '../shared/cursor.ts';
import { ForbiddenError, NotFoundError } from '../shared/errors.ts';
import { type ChainBreak, checkEntries, parseEntry, type StoredEntry } from './audit.model.ts';
import * as repo from './audit.repository.ts';

export interface AuditDeps {
  db: Kysely<DB>;
  clock: Clock;
}

/** How the log stores who acted: the actor, and when. */
export function auditMeta(actor: Actor, at: Date): repo.AuditMeta {
  return {
    organizationId: actor.organizationId,
    actor: actor.kind,
    actorKeyId: actor.keyId,
    requestId: actor.requestId ?? null,
    at,
  };
}

type EntryRow = Awaited<ReturnType<typeof repo.chainPage>>[number];

function toStored(row: EntryRow): StoredEntry {
  return {
    organizationId: row.organization_id,
    seq: row.seq,
    action: row.action,
    actor: row.actor,
    actorKeyId: row.actor_key_id,
    target: row.target,
    requestId: row.request_id,
    createdAt: row.created_at,
    entry: row.entry,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

function toEntry(row: EntryRow): AuditEntry {
  return {
    seq: row.seq,
    organizationId: row.organization_id,
    action: row.action,
    actor: row.actor,
    actorKeyId: row.actor_key_id,
    target: row.target,
    requestId: row.request_id,
    at: toUnixSeconds(row.created_at),
    details: parseEntry(row.entry)?.details ?? {},
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/** Entries read per query while walking a chain. */
const PAGE = 1000;

/**
 * An organization's log as read by an operator, or the caller's own. An organization that does not
 * exist is not found, not an empty log: a mistyped id must not pass for a chain with no entries.
 */
async function organizationOf(db: Kysely<DB>, actor: Actor, requested: string | undefined): Promise<string> {
  if (requested === undefined || requested === actor.organizationId) return actor.organizationId;
  if (!actor.operator) throw new ForbiddenError('only the operator (ADMIN_API_KEY) reads another organization’s log');
  if (!(await findOrganization(db, requested))) throw new NotFoundError(`organization ${requested} is not known`);
  return requested;
}

export function createAuditService({ db, clock }: AuditDeps) {
  return {
    /** Appends an entry to the actor's organization's chain, in the transaction of `executor` (the change it logs). */
    async append(
      executor: Kysely<DB>,
      actor: Actor,
      action: string,
      target: string | null,
      details: Record<string, unknown> = {},
      at: Date = clock(),
    ): Promise<void> {
      await repo.appendEntry(executor, auditMeta(actor, at), action, target, details);
    },

    /** Appends an entry on its own (an action whose effect is queued, such as a recomputation). */
    async record(actor: Actor, action: string, target: string | null, details: Record<string, unknown> = {}) {
      await repo.appendEntry(db, auditMeta(actor, clock()), action, target, details);
    },

    /** The organization's entries, newest first, paginated and filtered. */
    async list(actor: Actor, query: AuditQuery): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
      const organizationId = await organizationOf(db, actor, query.organizationId);
      const beforeSeq = query.cursor === undefined ? undefined : idFromCursor(query.cursor);
      const rows = await repo.listEntries(
        db,
        {
          organizationId,
          action: query.action,
          target: query.target,
          actorKeyId: query.actorKeyId,
          from: query.from === undefined ? undefined : new Date(query.from * 1000),
          to: query.to === undefined ? undefined : new Date(query.to * 1000),
          beforeSeq,
        },
        query.limit,
      );
      const { items, nextCursor } = page(
        rows.map((row) => ({ ...row, id: row.seq })),
        query.limit,
      );
      return { entries: items.map(toEntry), nextCursor };
    },

    /**
     * The organization's chain from its first entry, one JSON object per line: the stored
     * columns and the exact text each hash covers, so anyone can check the chain with sha256.
     */
    async *exportLines(actor: Actor, requested?: string): AsyncGenerator<string> {
      const organizationId = await organizationOf(db, actor, requested);
      let after = '0';
      for (;;) {
        const rows = await repo.chainPage(db, organizationId, after, PAGE);
        for (const row of rows) {
          yield `${JSON.stringify({
            organizationId: row.organization_id,
            seq: row.seq,
            createdAt: row.created_at.toISOString(),
            entry: row.entry,
            prevHash: row.prev_hash,
            hash: row.hash,
          })}\n`;
        }
        const last = rows[rows.length - 1];
        if (!last || rows.length < PAGE) return;
        after = last.seq;
      }
    },

    /**
     * Walks every organization's chain (or one): each entry's number, previous hash, hash and
     * columns, and the head that records the last entry. Returns what it checked and every break:
     * a chain with entries and no head is one (a removed head must not hide an edited log). An
     * organization named that does not exist is no organization checked (0).
     */
    async verify(organizationId?: string): Promise<{ organizations: number; entries: number; broken: ChainBreak[] }> {
      // One snapshot for the heads and the log: an entry appended (and its head moved) while the
      // walk runs is seen with its head or not at all, never as a log that runs past its head.
      return db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute((trx) => walk(trx, organizationId));
    },
  };

  async function walk(executor: Kysely<DB>, organizationId?: string) {
    const heads = await repo.chains(executor, organizationId);
    const broken: ChainBreak[] = [];
    let entries = 0;
    for (const head of heads) {
      let state = checkEntries([]).last;
      let after = '0';
      let failed: ChainBreak | null = null;
      for (;;) {
        const rows = await repo.chainPage(executor, head.organization_id, after, PAGE);
        entries += rows.length;
        const checked = checkEntries(rows.map(toStored), state);
        state = checked.last;
        if (checked.broken) {
          failed = checked.broken;
          break;
        }
        const last = rows[rows.length - 1];
        if (!last || rows.length < PAGE) break;
        after = last.seq;
      }
      if (!failed && head.seq === null && state.seq !== 0n) {
        failed = {
          organizationId: head.organization_id,
          seq: String(state.seq),
          problem: `no head records the chain, which has ${state.seq} entries`,
        };
      } else if (!failed && head.seq !== null && (String(state.seq) !== head.seq || state.hash !== head.hash)) {
        failed = {
          organizationId: head.organization_id,
          seq: head.seq,
          problem: `the head records entry ${head.seq} but the log ends at ${state.seq}`,
        };
      }
      if (failed) broken.push(failed);
    }
    return { organizations: heads.length, entries, broken };
  }
}

export type AuditService = ReturnType<typeof createAuditService>;
