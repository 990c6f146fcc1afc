import type { Kysely } from 'kysely';

// Score changes made by a job carry its id, so a redelivered job can tell it already ran.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('score_events').addColumn('job_id', 'text').execute();
  await db.schema.createIndex('score_events_job_idx').on('score_events').column('job_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('score_events_job_idx').execute();
  await db.schema.alterTable('score_events').dropColumn('job_id').execute();
}
