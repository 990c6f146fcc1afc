import type { DB, Kysely } from '@vouch/db';
import type { ComputeInput } from '@vouch/schemas';
import { colorFor, gradeFor } from '../agents/agents.model.ts';
import { findAgent, scoreActivity } from '../agents/agents.repository.ts';
import type { Clock } from '../shared/clock.ts';
import { AgentNotFoundError } from '../shared/errors.ts';
import { computeScore, type ScoreInputs, weiToEther } from './scores.model.ts';

const DAY_MS = 86_400_000;
/** budgetCompliance looks at spend attempts of this many trailing days. */
export const COMPLIANCE_WINDOW_DAYS = 30;

export interface ScoresDeps {
  db: Kysely<DB>;
  clock: Clock;
}

export function createScoresService({ db, clock }: ScoresDeps) {
  /** The model's inputs for one agent, read from its recorded transactions and spends. */
  async function inputsFor(address: string): Promise<ScoreInputs & { currentScore: number }> {
    const agent = await findAgent(db, address);
    if (!agent) throw new AgentNotFoundError(address);
    const now = clock();
    const activity = await scoreActivity(db, address, new Date(now.getTime() - COMPLIANCE_WINDOW_DAYS * DAY_MS));
    return {
      currentScore: agent.score,
      successRate: activity.transaction_count === 0 ? 0 : activity.success_count / activity.transaction_count,
      volumeEther: weiToEther(BigInt(activity.total_volume)),
      transactionCount: activity.transaction_count,
      budgetCompliance: activity.spend_attempts === 0 ? 1 : activity.spends_within / activity.spend_attempts,
      accountAgeDays: Math.max(0, Math.floor((now.getTime() - agent.first_seen_at.getTime()) / DAY_MS)),
    };
  }

  return {
    inputsFor,

    /** The model applied to the agent's real data, with each factor's share. */
    async breakdown(address: string) {
      const { currentScore, ...inputs } = await inputsFor(address);
      const { score, factors } = computeScore(inputs);
      return { agent: address, score, grade: gradeFor(score), color: colorFor(score), currentScore, factors };
    },

    /** Stateless: the model over caller-supplied data. */
    compute(input: ComputeInput) {
      const { score, factors } = computeScore({
        successRate: input.successRate,
        volumeEther: weiToEther(BigInt(input.totalVolume)),
        transactionCount: input.transactionCount,
        budgetCompliance: input.budgetCompliance,
        accountAgeDays: input.accountAge,
      });
      return { score, grade: gradeFor(score), color: colorFor(score), factors };
    },
  };
}

export type ScoresService = ReturnType<typeof createScoresService>;
