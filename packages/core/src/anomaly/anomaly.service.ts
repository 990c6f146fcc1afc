import type { DB, Kysely } from '@vouch/db';
import { findAgent } from '../agents/agents.repository.ts';
import type { SanctionsService } from '../sanctions/sanctions.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { VerificationService } from '../verification/verification.service.ts';
import { type AnomalyResult, type AnomalyThresholds, evaluateAnomaly } from './anomaly.model.ts';
import * as repo from './anomaly.repository.ts';

export interface AnomalyInput {
  agent: string;
  txHash?: string | undefined;
  amount: string;
  /** CAIP-19 id of what `amount` counts; '' or absent: the native unit (wei). */
  asset?: string | undefined;
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
  /** The anomaly model over a prospective (or just made) transaction and the agent's history; stores nothing. */
  async function assess(input: AnomalyInput, now: Date = clock(), executor: Kysely<DB> = db): Promise<AnomalyResult> {
    const since = new Date(now.getTime() - WINDOW_HOURS * HOUR_MS);
    const hourAgo = new Date(now.getTime() - HOUR_MS);
    const [agent, h, latest] = await Promise.all([
      findAgent(executor, input.agent),
      // A transaction checked after it was recorded is the one judged, not also its own history.
      repo.transactionHistory(executor, input.agent, input.asset ?? '', { since, hourAgo, now }, input.txHash ?? null),
      verification.latest(input.agent, executor),
    ]);
    // The agent, its owner and the counterparty, against the active list (none: said, and a match).
    const screened = await sanctions.forDecision(
      input.agent,
      agent?.owner ?? null,
      input.counterparty ?? null,
      executor,
    );
    // The history the hourly average is taken over: the agent's life, or longer when transactions
    // were recorded from before it was first seen (backdated), which the count includes. Counted
    // over its life alone, a backdated history would raise the average and hide a burst.
    const started = Math.min(
      agent ? agent.first_seen_at.getTime() : now.getTime(),
      h.first_at ? new Date(h.first_at).getTime() : now.getTime(),
    );
    const ageHours = (now.getTime() - started) / HOUR_MS;
    return evaluateAnomaly(
      {
        lastHourCount: h.last_hour,
        count30d: h.count30d,
        failed30d: h.failed30d,
        assetCount30d: h.asset_count30d,
        volume30d: BigInt(h.volume30d),
        historyHours: Math.max(1, Math.min(WINDOW_HOURS, ageHours)),
        amount: BigInt(input.amount),
        agentSanctioned: screened.agent,
        ownerSanctioned: screened.owner,
        counterpartySanctioned: screened.counterparty,
        sanctionsListUnavailable: screened.list === null,
        agentSuspicious: latest?.status === 'SUSPICIOUS',
      },
      thresholds,
    );
  }

  return {
    assess,

    /** Scores a prospective (or just made) transaction against the agent's history; stored as the organization's that asked. */
    async check(
      input: AnomalyInput & { organizationId: string },
    ): Promise<AnomalyResult & { agent: string; checkedAt: number }> {
      const now = clock();
      const result = await assess(input, now);
      await repo.insertAnomalyCheck(db, {
        organization_id: input.organizationId,
        agent: input.agent,
        tx_hash: input.txHash ?? null,
        amount: input.amount,
        asset: input.asset ?? '',
        type: input.type,
        anomaly_detected: result.anomalyDetected,
        risk_score: result.riskScore,
        severity: result.severity,
        flags: JSON.stringify(result.flags),
        factors: JSON.stringify(result.factors),
        created_at: now,
      });
      return { agent: input.agent, ...result, checkedAt: toUnixSeconds(now) };
    },

    /** The agent's latest check of those `organizationId` asked for. */
    latest(organizationId: string, agent: string) {
      return repo.latestAnomalyCheck(db, organizationId, agent);
    },
  };
}

export type AnomalyService = ReturnType<typeof createAnomalyService>;
