import type { DB, Kysely } from '@vouch/db';
import { findAgent } from '../agents/agents.repository.ts';
import type { SanctionsService } from '../sanctions/sanctions.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { VerificationService } from '../verification/verification.service.ts';
import type { Severity } from './anomaly.model.ts';
import type { AnomalyService } from './anomaly.service.ts';

const rank: Record<Severity, number> = { LOW: 0, MEDIUM: 1, HIGH: 2, CRITICAL: 3 };
const RECENT_MS = 30 * 86_400_000;

/** Risk implied by a verification status. */
const verificationRisk: Record<string, Severity> = {
  VERIFIED: 'LOW',
  PARTIALLY_VERIFIED: 'LOW',
  UNVERIFIED: 'MEDIUM',
  SUSPICIOUS: 'HIGH',
};

export function createEnrichService(deps: {
  db: Kysely<DB>;
  clock: Clock;
  sanctions: SanctionsService;
  verification: VerificationService;
  anomaly: AnomalyService;
}) {
  return {
    /**
     * Off-chain enrichment for scoring workflows, from the agent's real data: a fresh
     * sanctions screening, the stored score (0–1000 → 0–100), and the most severe of the
     * latest anomaly check the organization asked for and the latest verification (30 days)
     * and the score band.
     */
    async enrich(organizationId: string, address: string) {
      const now = deps.clock();
      const [screening, agent, verification, anomaly] = await Promise.all([
        deps.sanctions.screen(address),
        findAgent(deps.db, address),
        deps.verification.latest(address),
        deps.anomaly.latest(organizationId, address),
      ]);
      // Its owner is screened too, as a decision screens it; with no list, nobody is clean.
      const owner = agent?.owner ? await deps.sanctions.forDecision(address, agent.owner, null) : null;
      const ownerListed = owner?.owner === true;
      const unscreened = screening.state === 'list_unavailable';
      const score = screening.sanctioned ? 0 : (agent?.score ?? 0);
      const recent = (at: Date | undefined) => at !== undefined && now.getTime() - at.getTime() <= RECENT_MS;
      // Sanctions first: of equally severe inputs the first names the reason.
      const candidates: Array<[Severity, string]> = [];
      if (screening.sanctioned) candidates.push(['CRITICAL', 'sanctioned']);
      if (ownerListed) candidates.push(['CRITICAL', 'owner sanctioned']);
      if (unscreened) candidates.push(['CRITICAL', 'no sanctions list: not screened']);
      candidates.push([score < 250 ? 'MEDIUM' : 'LOW', `score ${score}`]);
      if (verification && recent(verification.created_at)) {
        candidates.push([verificationRisk[verification.status] ?? 'MEDIUM', `verification ${verification.status}`]);
      }
      if (anomaly && recent(anomaly.created_at))
        candidates.push([anomaly.severity as Severity, `anomaly ${anomaly.severity}`]);
      const [riskLevel, reason] = candidates.reduce((worst, c) => (rank[c[0]] > rank[worst[0]] ? c : worst));
      return {
        agent: address,
        sanctionsClean: screening.state === 'clear' && !ownerListed,
        apiReputationScore: Math.round(score / 10),
        riskLevel,
        riskReason: reason,
        lastChecked: screening.checkedAt,
        sources: {
          score,
          known: agent !== undefined,
          sanctions: screening.source,
          latestVerification: verification
            ? { status: verification.status, at: toUnixSeconds(verification.created_at) }
            : null,
          latestAnomaly: anomaly
            ? { severity: anomaly.severity, riskScore: anomaly.risk_score, at: toUnixSeconds(anomaly.created_at) }
            : null,
        },
      };
    },
  };
}

export type EnrichService = ReturnType<typeof createEnrichService>;
