import type { Context } from '../lib/context.ts';
import { spendSql } from '../lib/sql-capture.ts';
import { type PgResult, replay } from './b2.ts';

/**
 * B3: the spend statement (captured from services.budgets.spend) against one hot budget,
 * plain pg, no HTTP, same concurrency as P3. Every spend is for 1 wei against limits far
 * above what a run spends, so all are accepted.
 */
export async function runB3(
  ctx: Context,
  poolMax: number,
  concurrency = ctx.profile.connections,
): Promise<PgResult & { refused: number }> {
  const captured = await spendSql(ctx.roles.spendSql, '1');
  if (captured.nowPositions.length === 0) throw new Error('B3: could not find the "now" parameters of the spend SQL');
  let refused = 0;
  const { result, cpu } = await replay(
    ctx,
    { sql: captured.sql, params: captured.refresh },
    {
      concurrency,
      poolMax,
      check: (rows) => {
        const row = rows[0] as { last_refusal: string | null } | undefined;
        if (!row) throw new Error('B3: the spend returned no row');
        if (row.last_refusal !== null) refused++;
      },
    },
  );
  if (result.errors) throw new Error(`B3: ${result.errors} errors, first: ${result.firstError}`);
  if (refused) throw new Error(`B3: ${refused} spends were refused; the budget should admit every one`);
  const { refresh: _refresh, ...sql } = captured;
  return {
    what: 'the spend SQL on one hot budget by a plain pg Pool, closed loop, no HTTP',
    poolMax,
    durationSec: ctx.profile.durationSec,
    warmupSec: ctx.profile.warmupSec,
    ...result,
    refused,
    cpu,
    sql,
  };
}
