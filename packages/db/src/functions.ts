import { type Kysely, sql } from 'kysely';

/**
 * Every SQL function and trigger of the schema, each defined once as a versioned definition
 * with its `create` and `drop`. Migrations call these and import nothing else of ours, so each
 * migration stands alone. A definition a migration has used is never edited: a changed
 * function is a new version here and a new migration that drops the old one and creates it.
 */
interface Definition {
  create(db: Kysely<unknown>): Promise<void>;
  drop(db: Kysely<unknown>): Promise<void>;
}

/**
 * v1 of the cache notifications, per row: every change of an agent or a budget announces
 * itself on channel `vouch_cache` (payload `<table>:<address>`), at commit. API processes
 * keep read caches of both and drop an entry when its notification arrives.
 */
export const cacheNotifyRowsV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_notify_cache() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':' || (to_jsonb(NEW) ->> TG_ARGV[0]));
      RETURN NULL;
    END $$`.execute(db);
    await sql`CREATE TRIGGER agents_notify_cache AFTER INSERT OR UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION vouch_notify_cache('address')`.execute(db);
    await sql`CREATE TRIGGER budgets_notify_cache AFTER INSERT OR UPDATE ON budgets
    FOR EACH ROW EXECUTE FUNCTION vouch_notify_cache('agent')`.execute(db);
  },
  async drop(db) {
    await sql`DROP TRIGGER IF EXISTS budgets_notify_cache ON budgets`.execute(db);
    await sql`DROP TRIGGER IF EXISTS agents_notify_cache ON agents`.execute(db);
    await sql`DROP FUNCTION IF EXISTS vouch_notify_cache()`.execute(db);
  },
};

/** A statement that changes more rows than this announces its whole table instead of each row. */
export const CACHE_NOTIFY_ROW_LIMIT = 100;

/**
 * v2 of the cache notifications, per statement: one trigger call per statement reads the
 * changed keys from its transition table and sends `<table>:<key>` for each, or `<table>:*`
 * (drop every entry of that table) when more than CACHE_NOTIFY_ROW_LIMIT rows changed. A score
 * recomputation changes 250 agents per statement: a row trigger ran 250 times (2.8–3.7 ms of a
 * 21–31 ms statement) and sent 250 notifications to every listener; this runs once and sends one.
 */
export const cacheNotifyStatementsV2: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_notify_cache_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      changed_count integer;
      changed_key text;
    BEGIN
      SELECT count(*) INTO changed_count FROM changed;
      IF changed_count > ${sql.raw(String(CACHE_NOTIFY_ROW_LIMIT))} THEN
        PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':*');
      ELSE
        FOR changed_key IN EXECUTE format('SELECT DISTINCT %I FROM changed', TG_ARGV[0]) LOOP
          PERFORM pg_notify('vouch_cache', TG_TABLE_NAME || ':' || changed_key);
        END LOOP;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
    // A trigger with a transition table serves one event, hence one per event.
    for (const [table, key] of [
      ['agents', 'address'],
      ['budgets', 'agent'],
    ] as const) {
      for (const event of ['insert', 'update'] as const) {
        await sql`CREATE TRIGGER ${sql.raw(`${table}_notify_cache_${event}`)}
          AFTER ${sql.raw(event.toUpperCase())} ON ${sql.table(table)} REFERENCING NEW TABLE AS changed
          FOR EACH STATEMENT EXECUTE FUNCTION vouch_notify_cache_rows(${sql.lit(key)})`.execute(db);
      }
    }
  },
  async drop(db) {
    for (const table of ['agents', 'budgets']) {
      for (const event of ['insert', 'update']) {
        await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_notify_cache_${event}`)} ON ${sql.table(table)}`.execute(
          db,
        );
      }
    }
    await sql`DROP FUNCTION IF EXISTS vouch_notify_cache_rows()`.execute(db);
  },
};

/**
 * v1 of what a verification reads (the agent, its recent transactions, the active sanctions
 * snapshot and the lists the address and its owner are on), as a function. The query joins
 * five tables through three subqueries: planned per call it cost ~1 ms before a 0.06 ms
 * execution; a PL/pgSQL function keeps its plan for the session, so a call is one short
 * statement. Always exactly one row (null columns for an unknown agent or no active snapshot).
 */
export const verificationFactsV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_verification_facts(p_address text, p_since timestamptz)
    RETURNS TABLE (
      known boolean, is_registered boolean, owner text, owner_changed_at timestamptz,
      first_seen_at timestamptz, score integer, recent_transactions integer,
      snapshot_id bigint, snapshot_name text, snapshot_date text, snapshot_entries integer,
      address_lists text[], owner_lists text[]
    )
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
      RETURN QUERY
      SELECT a.address IS NOT NULL, a.is_registered, a.owner, a.owner_changed_at, a.first_seen_at, a.score,
        (SELECT count(*)::int FROM transactions t WHERE t.agent = p_address AND t.occurred_at >= p_since),
        ss.id, ss.name, ss.snapshot_date, ss.entries,
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = p_address),
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = a.owner)
      FROM (SELECT 1) AS one
      LEFT JOIN agents a ON a.address = p_address
      LEFT JOIN (SELECT s.id, s.name, s.snapshot_date, s.entries FROM sanctions_snapshots s WHERE s.is_active LIMIT 1) ss
        ON true;
    END $$`.execute(db);
  },
  async drop(db) {
    await sql`DROP FUNCTION IF EXISTS vouch_verification_facts(text, timestamptz)`.execute(db);
  },
};

/**
 * v2 of what a verification reads: v1 and the active snapshot's content hash, so that every
 * verification names exactly the list it screened against.
 */
export const verificationFactsV2: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_verification_facts(p_address text, p_since timestamptz)
    RETURNS TABLE (
      known boolean, is_registered boolean, owner text, owner_changed_at timestamptz,
      first_seen_at timestamptz, score integer, recent_transactions integer,
      snapshot_id bigint, snapshot_name text, snapshot_date text, snapshot_entries integer, snapshot_hash text,
      address_lists text[], owner_lists text[]
    )
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
      RETURN QUERY
      SELECT a.address IS NOT NULL, a.is_registered, a.owner, a.owner_changed_at, a.first_seen_at, a.score,
        (SELECT count(*)::int FROM transactions t WHERE t.agent = p_address AND t.occurred_at >= p_since),
        ss.id, ss.name, ss.snapshot_date, ss.entries, ss.content_hash,
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = p_address),
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = a.owner)
      FROM (SELECT 1) AS one
      LEFT JOIN agents a ON a.address = p_address
      LEFT JOIN (SELECT s.id, s.name, s.snapshot_date, s.entries, s.content_hash FROM sanctions_snapshots s WHERE s.is_active LIMIT 1) ss
        ON true;
    END $$`.execute(db);
  },
  async drop(db) {
    await sql`DROP FUNCTION IF EXISTS vouch_verification_facts(text, timestamptz)`.execute(db);
  },
};

/**
 * v1 of the audit log's guard: `audit_log` is append-only. An UPDATE or DELETE of a row, or a
 * TRUNCATE, raises an error whoever runs it; only a superuser who disables the triggers can
 * change a row, and the hash chain (packages/core/src/audit) then shows where.
 */
export const auditAppendOnlyV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$`.execute(db);
    await sql`CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION vouch_audit_append_only()`.execute(db);
    await sql`CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION vouch_audit_append_only()`.execute(db);
  },
  async drop(db) {
    await sql`DROP TRIGGER IF EXISTS audit_log_no_truncate ON audit_log`.execute(db);
    await sql`DROP TRIGGER IF EXISTS audit_log_append_only ON audit_log`.execute(db);
    await sql`DROP FUNCTION IF EXISTS vouch_audit_append_only()`.execute(db);
  },
};

/**
 * v1 of the cache notifications of `policies`: the statement triggers of v2 (the same
 * `vouch_notify_cache_rows`, which a migration has already created) on `policies.cache_key`, a
 * generated `<organization>/<agent>`, so each change drops `policies:<organization>/<agent>`.
 */
export const policiesCacheNotifyV1: Definition = {
  async create(db) {
    for (const event of ['insert', 'update'] as const) {
      await sql`CREATE TRIGGER ${sql.raw(`policies_notify_cache_${event}`)}
        AFTER ${sql.raw(event.toUpperCase())} ON policies REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION vouch_notify_cache_rows('cache_key')`.execute(db);
    }
  },
  async drop(db) {
    for (const event of ['insert', 'update']) {
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(`policies_notify_cache_${event}`)} ON policies`.execute(db);
    }
  },
};

/**
 * v1 of a score's grade in SQL, for statements that announce grade changes (grade.changed) as
 * they write scores: the same table as `gradeFor` (packages/core/src/agents/agents.model.ts;
 * a test compares the two for every score). Immutable and in SQL, so PostgreSQL inlines it.
 */
export const gradeV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_grade(p_score integer) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE
        WHEN p_score >= 950 THEN 'AAA' WHEN p_score >= 900 THEN 'AA' WHEN p_score >= 850 THEN 'A'
        WHEN p_score >= 750 THEN 'BBB' WHEN p_score >= 650 THEN 'BB' WHEN p_score >= 550 THEN 'B'
        WHEN p_score >= 450 THEN 'CCC' WHEN p_score >= 350 THEN 'CC' WHEN p_score >= 250 THEN 'C'
        ELSE 'D' END
    $$`.execute(db);
  },
  async drop(db) {
    await sql`DROP FUNCTION IF EXISTS vouch_grade(integer)`.execute(db);
  },
};

/** The events' horizon's body, the same in every version (their comments say what it computes). */
const eventsHorizon = (volatility: 'VOLATILE' | 'STABLE') => sql`
    CREATE OR REPLACE FUNCTION vouch_events_horizon() RETURNS xid8 LANGUAGE sql ${sql.raw(volatility)} AS $$
      WITH s AS (SELECT pg_current_snapshot() AS snap),
      elsewhere AS (
        SELECT a.backend_xid::text AS xid FROM pg_stat_activity a
        WHERE a.backend_xid IS NOT NULL
          AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
      )
      SELECT coalesce(
        (SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x
          WHERE (x::text::numeric % 4294967296)::text NOT IN (SELECT xid FROM elsewhere)),
        (SELECT pg_snapshot_xmax(s.snap) FROM s))
    $$`;

/**
 * v1 of the events' horizon: a transaction id below which every transaction of this database
 * has finished, so the events below it will never change (docs/events.md "Reading in order").
 * It is the oldest transaction still running in this database, or the next one to start if none
 * is. PostgreSQL's own snapshot horizon counts the transactions of every database of the cluster,
 * so a long write in another database would hold events back; those are left out by their
 * `pg_stat_activity` entry. A running transaction whose database is not known is counted: at
 * worst an event waits for it. Replaced by v2: volatile, it took a snapshot of its own.
 */
export const eventsHorizonV1: Definition = {
  async create(db) {
    await eventsHorizon('VOLATILE').execute(db);
  },
  async drop(db) {
    await sql`DROP FUNCTION IF EXISTS vouch_events_horizon()`.execute(db);
  },
};

/**
 * v2 of the events' horizon: v1, stable. A volatile function takes a snapshot of its own, later
 * than the one the statement calling it reads the events with: a transaction that committed in
 * between was below the horizon yet invisible to the read, and a reader moving its cursor to the
 * horizon (`GET /api/events`, the webhooks' dispatch) passed its events for good. Stable, it sees
 * the calling statement's snapshot, the one the events are read in.
 */
export const eventsHorizonV2: Definition = {
  async create(db) {
    await eventsHorizon('STABLE').execute(db);
  },
  async drop(db) {
    await eventsHorizonV1.create(db);
  },
};

/**
 * v1 of a reservation's budget thresholds: called by the spend or hold statement, after its
 * `UPDATE` of the budget and only when that reservation was accepted and left a window at or
 * above the lowest threshold. Per window (the day, then the month): the highest of `thresholds`
 * (percentages, ascending) that spent + held now reaches; if it is above what `budget_alerts`
 * holds for the budget's current window, that row is raised to it and one `budget.threshold`
 * event row (`type`, `data`) is returned for each threshold between the two. The statement's
 * row lock on the budget orders its reservations, so each threshold is returned once per window.
 * Volatile: each of its queries reads what the reservations before it committed. Kept out of the
 * statement, every expression of which PostgreSQL sets up on each execution, evaluated or not, so
 * that the many reservations that cross nothing pay for none of this (docs/events.md).
 */
export const budgetThresholdsV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_budget_thresholds(
      p_organization_id text, p_agent text, p_asset text, p_thresholds int[],
      p_day_start timestamptz, p_daily_limit numeric, p_daily_spent numeric, p_daily_held numeric,
      p_month_start timestamptz, p_monthly_limit numeric, p_monthly_spent numeric, p_monthly_held numeric,
      p_spend_id text, p_authorization_id text)
    RETURNS TABLE (type text, data jsonb) LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      w record;
      v_reached integer;
      v_before integer;
    BEGIN
      FOR w IN
        SELECT * FROM (VALUES
          ('daily', p_day_start, p_day_start + interval '24 hours', p_daily_limit, p_daily_spent, p_daily_held),
          ('monthly', p_month_start, ((p_month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
            p_monthly_limit, p_monthly_spent, p_monthly_held)
        ) AS v(name, starts, ends, lim, spent, held)
      LOOP
        CONTINUE WHEN w.lim = 0;
        SELECT max(t) INTO v_reached FROM unnest(p_thresholds) AS t WHERE (w.spent + w.held) * 100 >= t * w.lim;
        CONTINUE WHEN v_reached IS NULL;
        -- No row yet: NULL, then 0.
        SELECT CASE WHEN a.period_start = w.starts THEN a.level ELSE 0 END INTO v_before
          FROM budget_alerts AS a
          WHERE a.organization_id = p_organization_id AND a.agent = p_agent AND a.asset = p_asset AND a.period = w.name;
        v_before := coalesce(v_before, 0);
        CONTINUE WHEN v_reached <= v_before;
        INSERT INTO budget_alerts AS a (organization_id, agent, asset, period, period_start, level)
          VALUES (p_organization_id, p_agent, p_asset, w.name, w.starts, v_reached)
          ON CONFLICT (organization_id, agent, asset, period)
          DO UPDATE SET period_start = EXCLUDED.period_start, level = EXCLUDED.level;
        RETURN QUERY
          SELECT 'budget.threshold'::text, jsonb_build_object('window', w.name, 'threshold', t, 'limit', w.lim::text,
            'spent', w.spent::text, 'held', w.held::text, 'asset', p_asset,
            'windowStart', extract(epoch FROM w.starts)::bigint, 'resetsAt', extract(epoch FROM w.ends)::bigint,
            'spendId', p_spend_id, 'authorizationId', p_authorization_id)
          FROM unnest(p_thresholds) AS t WHERE t > v_before AND t <= v_reached ORDER BY t;
      END LOOP;
    END $$`.execute(db);
  },
  async drop(db) {
    await sql`DROP FUNCTION IF EXISTS vouch_budget_thresholds(text, text, text, int[], timestamptz, numeric, numeric,
      numeric, timestamptz, numeric, numeric, numeric, text, text)`.execute(db);
  },
};

/**
 * v1 of the owner notifications: an agent whose owner changed sends `budgets:<address>` at
 * commit. Cached budget rows carry their agent's screening, which screens the owner too (SANCTIONED
 * when either is listed), but the agents' triggers announce only `agents:<address>`: every other
 * API process kept checking the agent's budget against its old owner (allowed after a change to a
 * listed owner) until the budget row itself changed. Per row, only when the owner differs: owner
 * changes are one agent at a time (PostgreSQL sends a payload once per transaction).
 */
export const agentOwnerNotifyBudgetsV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_notify_owner_budgets() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('vouch_cache', 'budgets:' || NEW.address);
      RETURN NULL;
    END $$`.execute(db);
    await sql`CREATE TRIGGER agents_owner_notify_budgets AFTER UPDATE OF owner ON agents
      FOR EACH ROW WHEN (OLD.owner IS DISTINCT FROM NEW.owner)
      EXECUTE FUNCTION vouch_notify_owner_budgets()`.execute(db);
  },
  async drop(db) {
    await sql`DROP TRIGGER IF EXISTS agents_owner_notify_budgets ON agents`.execute(db);
    await sql`DROP FUNCTION IF EXISTS vouch_notify_owner_budgets()`.execute(db);
  },
};

/**
 * v1 of the sanctions notifications: any change of the lists — which snapshot is active (an
 * import, a restore, or an edit by hand that leaves none active) or the addresses a snapshot
 * holds — tells every API process, at commit, to drop its cached budgets (they carry the agent's
 * screening) and its cached copy of the active list (`budgets:*`, `sanctions:*`; PostgreSQL sends
 * a payload once per transaction however many statements repeat it). A process that kept either
 * would screen against a list that is no longer the active one, or pass payments while no list is
 * active.
 */
export const sanctionsNotifyCacheV1: Definition = {
  async create(db) {
    await sql`
    CREATE FUNCTION vouch_notify_sanctions() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('vouch_cache', 'budgets:*');
      PERFORM pg_notify('vouch_cache', 'sanctions:*');
      RETURN NULL;
    END $$`.execute(db);
    for (const table of ['sanctions_snapshots', 'sanctions_entries']) {
      await sql`CREATE TRIGGER ${sql.raw(`${table}_notify_cache`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
        ON ${sql.table(table)} FOR EACH STATEMENT EXECUTE FUNCTION vouch_notify_sanctions()`.execute(db);
    }
  },
  async drop(db) {
    for (const table of ['sanctions_snapshots', 'sanctions_entries']) {
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_notify_cache`)} ON ${sql.table(table)}`.execute(db);
    }
    await sql`DROP FUNCTION IF EXISTS vouch_notify_sanctions()`.execute(db);
  },
};
