import type { Kysely } from 'kysely';
import { agentOwnerNotifyBudgetsV1 } from '../functions.ts';

/**
 * A change of an agent's owner drops that agent's cached budgets in every API process
 * (functions.ts, agentOwnerNotifyBudgetsV1): they carry the agent's screening, which screens the
 * owner, and the agents' own notification drops only the cached score.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await agentOwnerNotifyBudgetsV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await agentOwnerNotifyBudgetsV1.drop(db);
}
