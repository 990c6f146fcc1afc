import type { DB, Kysely } from '@vouch/db';
import { sql } from '@vouch/db';
import { type Grade, gradeFor } from '../agents/agents.model.ts';
import { findAgent } from '../agents/agents.repository.ts';
import type { SanctionsService } from '../sanctions/sanctions.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { ChainReader } from './chain.ts';
import {
  type CheckKey,
  checkKeys,
  evaluateChecks,
  statusFor,
  type VerificationStatus,
  type VerificationThresholds,
} from './verification.model.ts';

export interface VerificationResult {
  address: string;
  status: VerificationStatus;
  grade: Grade;
  score: number;
  checks: Record<CheckKey, boolean>;
  checkDetails: Record<CheckKey, string>;
  passed: number;
  total: number;
  verifiedAt: number;
}

export interface VerificationDeps {
  db: Kysely<DB>;
  clock: Clock;
  chain: ChainReader | null;
  sanctions: SanctionsService;
  thresholds: VerificationThresholds;
}

const DAY_MS = 86_400_000;

export function createVerificationService({ db, clock, chain, sanctions, thresholds }: VerificationDeps) {
  return {
    /** Runs the 8 checks on any well-formed address and stores the result. */
    async verify(address: string): Promise<VerificationResult> {
      const now = clock();
      const agent = await findAgent(db, address);
      const since = new Date(now.getTime() - thresholds.activityWindowDays * DAY_MS);
      const [activity, screened, code, onChainOwner] = await Promise.all([
        sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM transactions WHERE agent = ${address} AND occurred_at >= ${since}`.execute(
          db,
        ),
        sanctions.screenMany(agent?.owner ? [address, agent.owner] : [address]),
        chain ? chain.hasCode(address) : null,
        chain && agent?.owner ? chain.owner(address) : null,
      ]);
      const score = agent?.score ?? 0;
      const results = evaluateChecks(
        {
          known: agent !== undefined,
          registered: agent?.is_registered ?? false,
          firstSeenAt: agent?.first_seen_at ?? null,
          owner: agent?.owner ?? null,
          ownerChangedAt: agent?.owner_changed_at ?? null,
          score,
          recentTransactions: activity.rows[0]?.n ?? 0,
          code,
          onChainOwner,
          addressSanctions: screened[0]?.matchedLists ?? [],
          ownerSanctions: screened[1]?.matchedLists ?? [],
        },
        thresholds,
        now,
      );
      const checks = Object.fromEntries(checkKeys.map((k) => [k, results[k].passed])) as Record<CheckKey, boolean>;
      const checkDetails = Object.fromEntries(checkKeys.map((k) => [k, results[k].detail])) as Record<CheckKey, string>;
      const passed = checkKeys.filter((k) => checks[k]).length;
      const result: VerificationResult = {
        address,
        status: statusFor(passed),
        grade: gradeFor(score),
        score,
        checks,
        checkDetails,
        passed,
        total: checkKeys.length,
        verifiedAt: toUnixSeconds(now),
      };
      await db
        .insertInto('verifications')
        .values({
          agent: address,
          status: result.status,
          passed,
          total: result.total,
          score,
          grade: result.grade,
          checks: JSON.stringify(checks),
          check_details: JSON.stringify(checkDetails),
          created_at: now,
        })
        .execute();
      return result;
    },

    /** Stored verifications of an address, newest first. */
    async list(address: string, limit = 50): Promise<VerificationResult[]> {
      const rows = await db
        .selectFrom('verifications')
        .selectAll()
        .where('agent', '=', address)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => ({
        address: r.agent,
        status: r.status as VerificationStatus,
        grade: r.grade as Grade,
        score: r.score,
        checks: r.checks as Record<CheckKey, boolean>,
        checkDetails: r.check_details as Record<CheckKey, string>,
        passed: r.passed,
        total: r.total,
        verifiedAt: toUnixSeconds(r.created_at),
      }));
    },

    latest(address: string) {
      return db
        .selectFrom('verifications')
        .select(['status', 'created_at'])
        .where('agent', '=', address)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
  };
}

export type VerificationService = ReturnType<typeof createVerificationService>;
