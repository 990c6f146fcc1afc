import type { DB, Kysely } from '@vouch/db';
import { sql } from '@vouch/db';
import { findAgent } from '../agents/agents.repository.ts';
import type { SanctionsService } from '../sanctions/sanctions.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { VerificationService } from '../verification/verification.service.ts';
import { type AnomalyResult, type AnomalyThresholds, evaluateAnomaly } from './anomaly.model.ts';

export interface AnomalyInput {
  agent: string;
  txHash?: string | undefined;
  amount: string;
  type: number;
  counterparty?: string | undefined;
}

export interface AnomalyDeps {
  db: Kysely<DB>;
  clock: Clock;
  sanctions: SanctionsService;
  verification: VerificationService;
  thresholds: AnomalyThresholds;
}

const HOUR_MS = 3_600_000;
const WINDOW_HOURS = 30 * 24;

export function createAnomalyService({ db, clock, sanctions, verification, thresholds }: AnomalyDeps) {
  return {
    /** Scores a prospective (or just made) transaction against the agent's history; stored. */
    async check(input: AnomalyInput): Promise<AnomalyResult & { agent: string; checkedAt: number }> {
      const now = clock();
      const since = new Date(now.getTime() - WINDOW_HOURS * HOUR_MS);
      const hourAgo = new Date(now.getTime() - HOUR_MS);
      const [agent, history, matched, latest] = await Promise.all([
        findAgent(db, input.agent),
        sql<{ count30d: number; failed30d: number; volume30d: string; last_hour: number }>`
          SELECT count(*)::int AS count30d,
                 (count(*) FILTER (WHERE NOT success))::int AS failed30d,
                 coalesce(sum(amount), 0)::text AS volume30d,
                 (count(*) FILTER (WHERE occurred_at >= ${hourAgo}))::int AS last_hour
          FROM transactions WHERE agent = ${input.agent} AND occurred_at >= ${since} AND occurred_at <= ${now}`.execute(
          db,
        ),
        sanctions.isSanctioned(input.counterparty ? [input.agent, input.counterparty] : [input.agent]),
        verification.latest(input.agent),
      ]);
      const h = history.rows[0] ?? { count30d: 0, failed30d: 0, volume30d: '0', last_hour: 0 };
      const ageHours = agent ? (now.getTime() - agent.first_seen_at.getTime()) / HOUR_MS : 0;
      const result = evaluateAnomaly(
        {
          lastHourCount: h.last_hour,
          count30d: h.count30d,
          failed30d: h.failed30d,
          volume30d: BigInt(h.volume30d),
          historyHours: Math.max(1, Math.min(WINDOW_HOURS, ageHours)),
          amount: BigInt(input.amount),
          agentSanctioned: matched.has(input.agent),
          counterpartySanctioned: input.counterparty ? matched.has(input.counterparty) : false,
          agentSuspicious: latest?.status === 'SUSPICIOUS',
        },
        thresholds,
      );
      await db
        .insertInto('anomaly_checks')
        .values({
          agent: input.agent,
          tx_hash: input.txHash ?? null,
          amount: input.amount,
          type: input.type,
          anomaly_detected: result.anomalyDetected,
          risk_score: result.riskScore,
          severity: result.severity,
          flags: JSON.stringify(result.flags),
          factors: JSON.stringify(result.factors),
          created_at: now,
        })
        .execute();
      return { agent: input.agent, ...result, checkedAt: toUnixSeconds(now) };
    },

    latest(agent: string) {
      return db
        .selectFrom('anomaly_checks')
        .select(['severity', 'risk_score', 'created_at'])
        .where('agent', '=', agent)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
  };
}

export type AnomalyService = ReturnType<typeof createAnomalyService>;
