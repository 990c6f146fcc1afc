import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';

/** A JSON body that is JSON but not I-JSON (RFC 7493): its meaning is not the same to every reader. */
export class NotIJsonError extends Error {
  readonly code: string = 'VOUCH_NOT_I_JSON';
  readonly statusCode = 400;
}

/** A JSON body that names one member twice in an object: which of the two counts is not defined. */
export class DuplicateMemberError extends NotIJsonError {
  override readonly code = 'VOUCH_DUPLICATE_MEMBER';
  constructor() {
    super('request body names a member twice in one object');
  }
}

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const LETTER_U = 117;

/**
 * Whether valid JSON `text` names a member twice in one object, names compared as decoded
 * (`"a\u0062"` is `"ab"`). Only valid JSON is given (it was parsed first): strings are skipped
 * by their quotes, and a string is a name right after `{` or after a `,` inside an object.
 */
export function hasDuplicateMember(text: string): boolean {
  // Per open container: the names seen (an object) or null (an array).
  const open: Array<Set<string> | null> = [];
  let name = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      for (let d = text.charCodeAt(end); d !== QUOTE; d = text.charCodeAt(end)) {
        if (d === BACKSLASH) {
          escaped = true;
          end += 2;
        } else end++;
      }
      if (name) {
        const names = open[open.length - 1] as Set<string>;
        const member = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        if (names.has(member)) return true;
        names.add(member);
        name = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      open.push(new Set());
      name = true;
    } else if (c === OPEN_ARRAY) open.push(null);
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) open.pop();
    else if (c === COMMA) name = open.length > 0 && open[open.length - 1] !== null;
  }
  return false;
}

/**
 * Whether valid JSON `text` (decoded from UTF-8, so holding no surrogate of its own) escapes half
 * of a surrogate pair without the other half right next to it (`"\ud800"`, `"\udc00\ud800"`):
 * such a string is no Unicode text, and storing it (UTF-8) replaces it with U+FFFD.
 */
export function hasLoneSurrogate(text: string): boolean {
  // Where the low half of the pair must start: right after its high half's escape.
  let lowExpectedAt = -1;
  // Valid JSON has backslashes only in strings, each starting an escape.
  for (let i = text.indexOf('\\'); i >= 0; i = text.indexOf('\\', i)) {
    if (text.charCodeAt(i + 1) !== LETTER_U) {
      if (lowExpectedAt >= 0) return true;
      i += 2;
      continue;
    }
    const unit = Number.parseInt(text.slice(i + 2, i + 6), 16);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    const low = unit >= 0xdc00 && unit <= 0xdfff;
    if (lowExpectedAt >= 0 ? !(low && lowExpectedAt === i) : low) return true;
    lowExpectedAt = high ? i + 6 : -1;
    i += 6;
  }
  return lowExpectedAt >= 0;
}

/**
 * JSON bodies are read as I-JSON (RFC 7493): Fastify's own parser (prototype poisoning
 * refused), and refused too are a member named twice in one object (§2.3: `JSON.parse` keeps the
 * last of the two, another reader of the same bytes may keep the first: a payment must mean one
 * thing), bytes that are not UTF-8 and an escaped lone surrogate (§2.1): neither is text, and
 * each would be stored as U+FFFD, not as sent.
 */
export function strictJsonBodies(app: Pick<FastifyInstance, 'getDefaultJsonParser' | 'addContentTypeParser'>): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer; // parseAs: 'buffer'
    if (!isUtf8(bytes)) return done(new NotIJsonError('request body is not UTF-8'), undefined);
    const text = bytes.toString('utf8');
    parse(request, text, (error, value) => {
      if (error) return done(error, undefined);
      if (hasDuplicateMember(text)) return done(new DuplicateMemberError(), undefined);
      if (hasLoneSurrogate(text)) {
        return done(new NotIJsonError('request body escapes half of a surrogate pair alone'), undefined);
      }
      done(null, value);
    });
  });
}
