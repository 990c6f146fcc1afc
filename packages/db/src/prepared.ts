import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import pg from 'pg';

/**
 * Statements that start with this comment run on PostgreSQL as named prepared statements:
 * parsed, analysed and (once PostgreSQL settles on a generic plan) planned once per
 * connection instead of on every call. Only statements a caller marks with `runPrepared`
 * get one, so a connection holds a handful, never one per distinct text. PGlite reads the
 * comment as a comment.
 */
const MARK = '/* prepared */ ';

/** Runs `query` as a named prepared statement (see MARK). Plugins see it as they see any query. */
export function runPrepared<R, DB>(db: Kysely<DB>, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  return db.executeQuery<R>({ ...query, sql: MARK + query.sql });
}

/** One name per marked text, the same on every connection of the process. */
const names = new Map<string, string>();

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `vouch_${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}

type Callback = (error: Error, result: pg.QueryResult) => void;

/**
 * pg's client, destroying its connection when a query's answer does not come in time. pg's
 * `query_timeout` fails the query but keeps the connection, which still waits for the lost
 * answer: returned to the pool, it would hang every later query given to it. Destroyed, the pool
 * drops it on release and opens a fresh one.
 */
class Guarded extends pg.Client {
  // @ts-expect-error pg types query() as overloads; this one forwards each of them unchanged.
  override query(...args: unknown[]) {
    const result = (super.query as (...a: unknown[]) => unknown).apply(this, args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Query read timeout') {
          (this as unknown as { connection: { stream: { destroy(e: Error): void } } }).connection.stream.destroy(
            new Error('Connection terminated: no answer within the query timeout'),
          );
        }
      });
    }
    return result;
  }
}

/** Typed as pg's client. */
export const GuardedClient = Guarded as unknown as typeof pg.Client;

/**
 * pg's client, turning marked text queries into named ones. pg parses a name once per
 * connection and only binds and executes it afterwards.
 */
class Preparing extends Guarded {
  override query(config: unknown, values?: unknown, callback?: Callback) {
    if (typeof config === 'string' && config.startsWith(MARK)) {
      const named = { name: statementName(config), text: config, values: values as unknown[] | undefined };
      return callback
        ? (super.query as (...a: unknown[]) => unknown).call(this, named, callback)
        : (super.query as (...a: unknown[]) => unknown).call(this, named);
    }
    // Every other form (config objects, submittables, callbacks) goes to pg as it came.
    return (super.query as (...args: unknown[]) => unknown).call(this, config, values, callback);
  }
}

/** Typed as pg's client: it answers every call pg's own overloads accept. */
export const PreparingClient = Preparing as unknown as typeof pg.Client;
