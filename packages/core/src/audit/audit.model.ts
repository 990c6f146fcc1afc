import { createHash } from 'node:crypto';

/**
 * The audit log's chain. Each organization's entries are numbered 1, 2, 3, … and each stores
 * the hash of the one before (the first, the genesis hash):
 *
 *     hash(n) = sha256_hex(hash(n−1) + "\n" + n + "\n" + entry(n))
 *
 * where `entry` is the JSON text of what happened (organizationId, action, actor, actorKeyId,
 * target, requestId, at, details), stored as it was hashed. Changing, removing or reordering
 * any entry breaks every hash after it; the organization's head (last number and hash) is
 * kept apart, so cutting entries off the end shows too.
 */
export const GENESIS_HASH = '0'.repeat(64);

export function chainHash(prevHash: string, seq: string | number | bigint, entry: string): string {
  return createHash('sha256').update(`${prevHash}\n${seq}\n${entry}`, 'utf8').digest('hex');
}

/** An entry as stored: the columns the log is filtered by, and the hashed text they were taken from. */
export interface StoredEntry {
  organizationId: string;
  seq: string;
  action: string;
  actor: string;
  actorKeyId: string | null;
  target: string | null;
  requestId: string | null;
  createdAt: Date;
  entry: string;
  prevHash: string;
  hash: string;
}

/** What the hashed text says. */
export interface EntryContent {
  organizationId: string;
  action: string;
  actor: string;
  actorKeyId: string | null;
  target: string | null;
  requestId: string | null;
  at: string;
  details: Record<string, unknown>;
}

export function parseEntry(entry: string): EntryContent | null {
  try {
    const parsed = JSON.parse(entry) as EntryContent;
    return parsed && typeof parsed === 'object' && typeof parsed.action === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

export interface ChainBreak {
  organizationId: string;
  seq: string;
  problem: string;
}

/**
 * Checks one organization's entries, given in order, continuing from `previous` (the last
 * entry checked before them, or none at the start of the chain). Returns the first break.
 */
export function checkEntries(
  entries: readonly StoredEntry[],
  previous: { seq: bigint; hash: string } = { seq: 0n, hash: GENESIS_HASH },
): { last: { seq: bigint; hash: string }; broken: ChainBreak | null } {
  let last = previous;
  for (const e of entries) {
    const at = (problem: string) => ({ last, broken: { organizationId: e.organizationId, seq: e.seq, problem } });
    const seq = BigInt(e.seq);
    if (seq !== last.seq + 1n) return at(`entry ${last.seq + 1n} is missing (next is ${seq})`);
    if (e.prevHash !== last.hash) return at('its previous hash is not the hash of the entry before');
    if (chainHash(e.prevHash, e.seq, e.entry) !== e.hash) return at('its hash does not match its content');
    const content = parseEntry(e.entry);
    if (!content) return at('its content is not an entry');
    const columns: Array<[string, unknown, unknown]> = [
      ['organizationId', e.organizationId, content.organizationId],
      ['action', e.action, content.action],
      ['actor', e.actor, content.actor],
      ['actorKeyId', e.actorKeyId, content.actorKeyId],
      ['target', e.target, content.target],
      ['requestId', e.requestId, content.requestId],
      ['at', e.createdAt.getTime(), Date.parse(content.at)],
    ];
    for (const [name, column, hashed] of columns) {
      if (column !== hashed) return at(`its ${name} column differs from the hashed entry`);
    }
    last = { seq, hash: e.hash };
  }
  return { last, broken: null };
}
