import type { FastifyInstance } from 'fastify';

/** A JSON body that names one member twice in an object: which of the two counts is not defined. */
export class DuplicateMemberError extends Error {
  readonly code = 'VOUCH_DUPLICATE_MEMBER';
  readonly statusCode = 400;
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
 * JSON bodies are read as I-JSON (RFC 7493 §2.3): Fastify's own parser (prototype poisoning
 * refused), and a member named twice in one object refused too. `JSON.parse` keeps the last of
 * the two, another reader of the same bytes may keep the first: a payment must mean one thing.
 */
export function strictJsonBodies(app: Pick<FastifyInstance, 'getDefaultJsonParser' | 'addContentTypeParser'>): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string; // parseAs: 'string'
    parse(request, text, (error, value) => {
      if (error) return done(error, undefined);
      if (hasDuplicateMember(text)) return done(new DuplicateMemberError(), undefined);
      done(null, value);
    });
  });
}
