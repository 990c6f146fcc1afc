import type { DB, Kysely, OrganizationsTable, Selectable } from '@vouch/db';

type Executor = Kysely<DB>;
export type OrganizationRow = Selectable<OrganizationsTable>;

/** Inserts an organization; undefined when the id is taken. */
export function insertOrganization(
  db: Executor,
  v: { id: string; name: string; rateLimitPerMinute: number | null; now: Date },
): Promise<OrganizationRow | undefined> {
  return db
    .insertInto('organizations')
    .values({ id: v.id, name: v.name, rate_limit_per_minute: v.rateLimitPerMinute, created_at: v.now })
    .onConflict((oc) => oc.column('id').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function findOrganization(db: Executor, id: string): Promise<OrganizationRow | undefined> {
  return db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listOrganizations(db: Executor): Promise<OrganizationRow[]> {
  return db.selectFrom('organizations').selectAll().orderBy('created_at').orderBy('id').execute();
}

export function updateOrganization(
  db: Executor,
  id: string,
  patch: { name?: string | undefined; rateLimitPerMinute?: number | null | undefined },
): Promise<OrganizationRow | undefined> {
  return db
    .updateTable('organizations')
    .set({
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.rateLimitPerMinute !== undefined && { rate_limit_per_minute: patch.rateLimitPerMinute }),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Each organization's own rate limit, where it has one. */
export async function rateLimits(db: Executor): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('organizations')
    .select(['id', 'rate_limit_per_minute'])
    .where('rate_limit_per_minute', 'is not', null)
    .execute();
  return new Map(rows.map((r) => [r.id, r.rate_limit_per_minute as number]));
}
