import { randomUUID } from 'node:crypto';

/**
 * A time-ordered UUID (version 7, RFC 9562 §5.7): the first 48 bits are the milliseconds since
 * 1970, the rest random. Ids made later sort after earlier ones (within one millisecond, in no
 * order), so a table keyed by them grows at the right edge of its index. The random bits are
 * `randomUUID`'s, which Node draws from a buffered pool: the `uuid` package's v7 asks the system
 * for 16 fresh bytes per id, which cost ~10 µs of the API's CPU per decision under load.
 */
export function timeOrderedId(ms: number = Date.now()): string {
  const time = ms.toString(16).padStart(12, '0');
  // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: keep everything after the version digit (the variant included).
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
