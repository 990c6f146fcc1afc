import { type Kysely, sql } from 'kysely';
import { budgetThresholdsV1 } from '../functions.ts';

/**
 * The highest budget threshold announced in a budget's current day and month moves from four
 * columns of `budgets`, rewritten by every spend, to `budget_alerts`, written by
 * `vouch_budget_thresholds` (functions.ts, budgetThresholdsV1) only when a reservation reaches a
 * threshold (docs/events.md, "budget.threshold"). One row per budget and period: the window it
 * was announced in and the level. What the columns held for a budget's current windows is kept.
 * Processes of the previous version write those columns: stop them before this runs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE budget_alerts (
      organization_id text NOT NULL,
      agent text NOT NULL,
      asset text NOT NULL,
      period text NOT NULL CHECK (period IN ('daily', 'monthly')),
      period_start timestamptz NOT NULL,
      level smallint NOT NULL CHECK (level BETWEEN 1 AND 100),
      PRIMARY KEY (organization_id, agent, asset, period),
      FOREIGN KEY (organization_id, agent, asset) REFERENCES budgets (organization_id, agent, asset)
    )`.execute(db);
  await sql`
    INSERT INTO budget_alerts (organization_id, agent, asset, period, period_start, level)
    SELECT organization_id, agent, asset, 'daily', day_start, daily_alerted FROM budgets WHERE daily_alerted > 0
    UNION ALL
    SELECT organization_id, agent, asset, 'monthly', month_start, monthly_alerted FROM budgets WHERE monthly_alerted > 0
  `.execute(db);
  await sql`ALTER TABLE budgets DROP COLUMN daily_alerted, DROP COLUMN monthly_alerted,
    DROP COLUMN daily_alerted_before, DROP COLUMN monthly_alerted_before`.execute(db);
  await budgetThresholdsV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await budgetThresholdsV1.drop(db);
  await sql`
    ALTER TABLE budgets
      ADD COLUMN daily_alerted smallint NOT NULL DEFAULT 0,
      ADD COLUMN monthly_alerted smallint NOT NULL DEFAULT 0,
      ADD COLUMN daily_alerted_before smallint NOT NULL DEFAULT 0,
      ADD COLUMN monthly_alerted_before smallint NOT NULL DEFAULT 0`.execute(db);
  await sql`
    UPDATE budgets AS b SET
      daily_alerted = coalesce((SELECT a.level FROM budget_alerts AS a WHERE a.organization_id = b.organization_id
        AND a.agent = b.agent AND a.asset = b.asset AND a.period = 'daily' AND a.period_start = b.day_start), 0),
      monthly_alerted = coalesce((SELECT a.level FROM budget_alerts AS a WHERE a.organization_id = b.organization_id
        AND a.agent = b.agent AND a.asset = b.asset AND a.period = 'monthly' AND a.period_start = b.month_start), 0)
    WHERE EXISTS (SELECT 1 FROM budget_alerts AS a WHERE a.organization_id = b.organization_id
      AND a.agent = b.agent AND a.asset = b.asset)`.execute(db);
  await sql`DROP TABLE budget_alerts`.execute(db);
}
