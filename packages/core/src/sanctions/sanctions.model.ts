import { createHash } from 'node:crypto';
import { XMLParser } from 'fast-xml-parser';

/** What the sanctions screen refuses a payment for (docs/api.md "Sanctions"); the schemas' list. */
export type { ScreeningRefusal } from '@vouch/schemas';

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const FEATURE_PREFIX = 'Digital Currency Address - ';

/** The EVM addresses of one list file (one address per line; other chains' addresses are skipped). */
export function evmAddressesOf(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => EVM_ADDRESS.test(line))
    .map((line) => line.toLowerCase());
}

/**
 * The SHA-256 of a snapshot's content: one `address:list,list` line per address, in address
 * order (the lists sorted, as `unionLists` keeps them). The migration that added the column
 * computes the same in SQL for snapshots imported before.
 */
export function contentHash(entries: Map<string, string[]>): string {
  const lines = [...entries.keys()].sort().map((address) => `${address}:${(entries.get(address) ?? []).join(',')}\n`);
  return createHash('sha256').update(lines.join('')).digest('hex');
}

/** An import that would leave the service screening against an empty or much smaller list. */
export function shrinkProblem(entries: number, activeEntries: number | null): string | null {
  if (entries === 0) return 'the new list names no address';
  if (activeEntries !== null && entries < activeEntries * MIN_KEPT_SHARE) {
    return `the new list names ${entries} addresses, fewer than half of the active list's ${activeEntries}`;
  }
  return null;
}

/** A new list must keep at least this share of the active list's size, unless forced. */
const MIN_KEPT_SHARE = 0.5;

/**
 * The union of every list: each EVM address once (lowercase), with the lists that
 * name it, sorted. An address may be listed under several assets.
 */
export function unionLists(lists: Record<string, string[]>): Map<string, string[]> {
  const union = new Map<string, string[]>();
  for (const [list, addresses] of Object.entries(lists)) {
    for (const raw of addresses) {
      if (!EVM_ADDRESS.test(raw)) continue;
      const address = raw.toLowerCase();
      const names = union.get(address) ?? [];
      if (!names.includes(list)) names.push(list);
      union.set(address, names);
    }
  }
  for (const names of union.values()) names.sort();
  return union;
}

/** What changed between two snapshots' address sets. */
export function diffSnapshots(
  before: Iterable<string>,
  after: Iterable<string>,
): { added: string[]; removed: string[] } {
  const old = new Set(before);
  const next = new Set(after);
  return {
    added: [...next].filter((a) => !old.has(a)).sort(),
    removed: [...old].filter((a) => !next.has(a)).sort(),
  };
}

/** A calendar date YYYY-MM-DD that exists (not empty, not 2026-02-30). */
export function isCalendarDate(d: string): boolean {
  const t = Date.parse(`${d}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(t) && new Date(t).toISOString().startsWith(d);
}

export interface SdnExtract {
  /** Address lists by asset (e.g. ETH, USDT), as published. */
  lists: Record<string, string[]>;
  /** The publication date, YYYY-MM-DD, when the file states it. */
  publishedOn: string | null;
}

type Node = Record<string, unknown>;

function asArray(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function textOf(value: unknown): string | null {
  if (typeof value === 'string' || typeof value === 'number') return String(value).trim();
  if (value && typeof value === 'object' && '#text' in (value as Node)) return String((value as Node)['#text']).trim();
  return null;
}

/** Every descendant node (at any depth) stored under `key`. */
function collect(node: unknown, key: string, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) {
    for (const item of node) collect(item, key, out);
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node as Node)) {
      if (k === key) out.push(...asArray(v));
      collect(v, key, out);
    }
  }
  return out;
}

/**
 * Reads OFAC's sdn_advanced.xml: the `FeatureType` whose text is
 * "Digital Currency Address - <ASSET>" gives a feature type id; every `Feature` with
 * that `FeatureTypeID` holds `VersionDetail` elements whose text is an address.
 */
export function parseSdnAdvancedXml(xml: string): SdnExtract {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    removeNSPrefix: true,
    parseTagValue: false,
    parseAttributeValue: false,
  });
  const doc = parser.parse(xml) as Node;
  const assets = new Map<string, string>();
  for (const featureType of collect(doc, 'FeatureType')) {
    const text = textOf(featureType);
    const id = (featureType as Node)?.['@ID'];
    if (text?.startsWith(FEATURE_PREFIX) && id !== undefined)
      assets.set(String(id), text.slice(FEATURE_PREFIX.length).trim());
  }
  const lists: Record<string, string[]> = {};
  for (const feature of collect(doc, 'Feature')) {
    const asset = assets.get(String((feature as Node)?.['@FeatureTypeID']));
    if (!asset) continue;
    for (const detail of collect(feature, 'VersionDetail')) {
      const address = textOf(detail);
      if (!address) continue;
      const list = lists[asset] ?? [];
      list.push(address);
      lists[asset] = list;
    }
  }
  for (const [asset, addresses] of Object.entries(lists)) lists[asset] = [...new Set(addresses)].sort();
  const issued = collect(doc, 'DateOfIssue')[0] as Node | undefined;
  const year = textOf(issued?.Year);
  const month = textOf(issued?.Month);
  const day = textOf(issued?.Day);
  const publishedOn =
    year && month && day ? `${year.padStart(4, '0')}-${month.padStart(2, '0')}-${day.padStart(2, '0')}` : null;
  return { lists, publishedOn };
}
