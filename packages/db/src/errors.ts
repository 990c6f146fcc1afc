/**
 * Classifies driver errors: true when the database is unreachable or went away
 * (connection refused/reset, pool timeout, server shutting down, no connection slot left), which callers
 * report as 503 rather than 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)) return true;
    // 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now;
    // 53300: every connection slot is taken ("sorry, too many clients already"), which passes
    // as soon as other clients disconnect — a busy server, not a fault of the request.
    if (code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
  }
  const message = error.message;
  return (
    message.includes('timeout exceeded when trying to connect') ||
    message.includes('Connection terminated') ||
    message.includes('Client has encountered a connection error') ||
    message.includes('connect ECONNREFUSED') ||
    // pg's query_timeout: the server did not answer in time (a frozen server or network).
    message === 'Query read timeout' ||
    message.includes('the database system is')
  );
}

/**
 * Whether PostgreSQL ended a statement for waiting or running too long, not for what it asked:
 * `statement_timeout` (57014), `lock_timeout` (55P03), or a deadlock's victim (40P01). A request
 * that meets it is answered 503 like an outage, since the same request a little later succeeds.
 * A job is not: it spends an attempt, as a statement too slow for its data would fail every time.
 */
export function isDatabaseBusy(error: unknown): boolean {
  const code = sqlState(error);
  return code === '57014' || code === '55P03' || code === '40P01';
}

/** Postgres SQLSTATE of a driver error, if any. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
