import { type Kysely, sql } from 'kysely';
import { eventsHorizonV1, gradeV1 } from '../functions.ts';

/**
 * Events and webhooks (docs/events.md): the `events` outbox, written in the transaction of the
 * change it announces; the dispatch position (which events have been fanned out to
 * subscriptions); webhook endpoints, their deliveries and each delivery's attempts; and on each
 * budget the highest threshold already announced in its current day and month.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // `txid` orders events by the transaction that wrote them: a reader takes only events of
  // transactions older than every one still running, so an event that commits late is never
  // behind a position already read (docs/events.md "Reading in order"). No foreign key on the
  // organization: every spend writes an event, and its organization is the actor's, never deleted.
  await sql`
    CREATE TABLE events (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      organization_id text NOT NULL,
      type text NOT NULL,
      agent text,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      txid xid8 NOT NULL DEFAULT pg_current_xact_id()
    )`.execute(db);
  await sql`CREATE INDEX events_organization_idx ON events (organization_id, txid, id)`.execute(db);

  // Per organization with webhooks: the last of its events fanned out to its subscriptions.
  await sql`
    CREATE TABLE event_dispatch (
      organization_id text PRIMARY KEY REFERENCES organizations (id),
      txid xid8 NOT NULL,
      event_id bigint NOT NULL
    )`.execute(db);

  await sql`
    CREATE TABLE webhooks (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id),
      url text NOT NULL,
      description text,
      event_types text[] NOT NULL,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      disabled_at timestamptz,
      failing_since timestamptz,
      last_success_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX webhooks_organization_idx ON webhooks (organization_id, created_at)`.execute(db);

  await sql`
    CREATE TABLE webhook_deliveries (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id),
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      run integer NOT NULL DEFAULT 1,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      last_status_code integer,
      last_error text,
      last_attempt_at timestamptz,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL,
      UNIQUE (webhook_id, event_id)
    )`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, id)`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id)`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending'`.execute(db);

  await sql`
    CREATE TABLE webhook_attempts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      status_code integer,
      duration_ms integer NOT NULL,
      error text,
      created_at timestamptz NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id)`.execute(db);

  // The highest threshold (a percentage) announced in the budget's current day and month, and
  // what they were before the last spend (carried to the event insert of the same statement).
  await sql`
    ALTER TABLE budgets
      ADD COLUMN daily_alerted smallint NOT NULL DEFAULT 0,
      ADD COLUMN monthly_alerted smallint NOT NULL DEFAULT 0,
      ADD COLUMN daily_alerted_before smallint NOT NULL DEFAULT 0,
      ADD COLUMN monthly_alerted_before smallint NOT NULL DEFAULT 0`.execute(db);

  await gradeV1.create(db);
  await eventsHorizonV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await eventsHorizonV1.drop(db);
  await gradeV1.drop(db);
  await sql`ALTER TABLE budgets DROP COLUMN daily_alerted, DROP COLUMN monthly_alerted,
    DROP COLUMN daily_alerted_before, DROP COLUMN monthly_alerted_before`.execute(db);
  await sql`DROP TABLE IF EXISTS webhook_attempts`.execute(db);
  await sql`DROP TABLE IF EXISTS webhook_deliveries`.execute(db);
  await sql`DROP TABLE IF EXISTS webhooks`.execute(db);
  await sql`DROP TABLE IF EXISTS event_dispatch`.execute(db);
  await sql`DROP TABLE IF EXISTS events`.execute(db);
}
