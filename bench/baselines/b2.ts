import pg from 'pg';
import { type ClosedLoopResult, closedLoop } from '../lib/closed-loop.ts';
import { type Context, type CpuUsage, withCpu } from '../lib/context.ts';
import { type CapturedQuery, scoreRouteSql } from '../lib/sql-capture.ts';

export interface PgResult extends ClosedLoopResult {
  what: string;
  poolMax: number;
  durationSec: number;
  warmupSec: number;
  cpu: CpuUsage;
  sql: CapturedQuery;
}

/**
 * Replays one statement with a plain `pg` Pool from this process: `concurrency` loops, each
 * sending the next query when the last answers, for the profile's warm-up and duration.
 */
export async function replay(
  ctx: Context,
  query: { sql: string; params: () => unknown[] },
  options: { concurrency: number; poolMax: number; check?: (rows: unknown[]) => void },
) {
  const pool = new pg.Pool({ connectionString: ctx.dbUrl, max: options.poolMax, application_name: 'vouch-bench-pg' });
  pool.on('error', () => {});
  try {
    // Open every connection before the clock starts (the API's pool is warm too).
    const clients = await Promise.all(Array.from({ length: options.poolMax }, () => pool.connect()));
    for (const c of clients) c.release();
    // A statement the product runs as a named prepared statement (packages/db/src/prepared.ts) is
    // replayed as one too: parsed and planned once per connection, as the product's.
    const name = query.sql.startsWith('/* prepared */') ? 'vouch_bench_replay' : undefined;
    const op = async () => {
      const r = await pool.query({ ...(name && { name }), text: query.sql, values: query.params() });
      options.check?.(r.rows);
    };
    if (ctx.profile.warmupSec) {
      await closedLoop({ concurrency: options.concurrency, durationSec: ctx.profile.warmupSec, op });
    }
    return await withCpu(ctx, () =>
      closedLoop({ concurrency: options.concurrency, durationSec: ctx.profile.durationSec, op }),
    );
  } finally {
    await pool.end();
  }
}

/** B2: the score route's SQL (captured from services.agents.getScore), plain pg, same concurrency as P1. */
export async function runB2(ctx: Context, poolMax: number): Promise<PgResult> {
  const captured = await scoreRouteSql(ctx.roles.score);
  const { result, cpu } = await replay(
    ctx,
    { sql: captured.sql, params: () => captured.parameters },
    {
      concurrency: ctx.profile.connections,
      poolMax,
      check: (rows) => {
        if (rows.length !== 1) throw new Error(`B2 query returned ${rows.length} rows`);
      },
    },
  );
  if (result.errors) throw new Error(`B2: ${result.errors} errors, first: ${result.firstError}`);
  return {
    what: 'the score route’s SQL by a plain pg Pool, closed loop',
    poolMax,
    durationSec: ctx.profile.durationSec,
    warmupSec: ctx.profile.warmupSec,
    ...result,
    cpu,
    sql: captured,
  };
}
