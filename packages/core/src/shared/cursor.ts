import { ValidationError } from './errors.ts';

/** A cursor carrying `text`, opaque to the caller. */
export function encodeCursor(text: string): string {
  return Buffer.from(text).toString('base64url');
}

/** The refusal of a cursor the service did not give out, naming the parameter. */
export const cursorNotIssued = () =>
  new ValidationError([{ path: 'querystring.cursor', message: 'is not a cursor this service issued' }]);

/**
 * The text a cursor of `encodeCursor` carries; a 400 for anything else. The decoder skips what is
 * not base64url (padding, dots, spaces): only the exact text given out names what it carries.
 */
export function cursorText(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (encodeCursor(text) !== cursor) throw cursorNotIssued();
  return text;
}

/** A page's cursor over rows numbered by a bigint id: the last id shown, opaque to the caller. */
export function idCursor(id: string): string {
  return encodeCursor(id);
}

/** The id a cursor of `idCursor` carries; anything else is a 400 naming the parameter. */
export function idFromCursor(cursor: string): string {
  const id = cursorText(cursor);
  if (/^[1-9]\d{0,17}$/.test(id)) return id; // within bigint
  throw cursorNotIssued();
}

/** The page of `limit` from rows fetched with `limit + 1`, and the cursor of the next page (or null). */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? idCursor(last.id) : null };
}
