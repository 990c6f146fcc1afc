import { ValidationError } from './errors.ts';

/** A page's cursor over rows numbered by a bigint id: the last id shown, opaque to the caller. */
export function idCursor(id: string): string {
  return Buffer.from(id).toString('base64url');
}

/** The id a cursor of `idCursor` carries; anything else is a 400 naming the parameter. */
export function idFromCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  // The decoder skips what is not base64url (padding, dots, spaces): only the exact text given out names the id.
  if (/^[1-9]\d{0,17}$/.test(id) && idCursor(id) === cursor) return id; // within bigint
  throw new ValidationError([{ path: 'querystring.cursor', message: 'is not a cursor this service issued' }]);
}

/** The page of `limit` from rows fetched with `limit + 1`, and the cursor of the next page (or null). */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? idCursor(last.id) : null };
}
