import type { DB, Kysely } from '@vouch/db';
import { type Grade, gradeFor } from '../agents/agents.model.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { ChainReader } from './chain.ts';
import {
  type CheckKey,
  checkKeys,
  evaluateChecks,
  statusFor,
  type VerificationResult,
  type VerificationStatus,
  type VerificationThresholds,
} from './verification.model.ts';
import * as repo from './verification.repository.ts';

export interface VerificationDeps {
  db: Kysely<DB>;
  clock: Clock;
  chain: ChainReader | null;
  thresholds: VerificationThresholds;
}

const DAY_MS = 86_400_000;

export function createVerificationService({ db, clock, chain, thresholds }: VerificationDeps) {
  return {
    /** Runs the 8 checks on any well-formed address and stores the result. */
    async verify(address: string): Promise<VerificationResult> {
      const now = clock();
      const since = new Date(now.getTime() - thresholds.activityWindowDays * DAY_MS);
      // One read and one write; the bytecode read runs alongside the read, owner() once the
      // read has given the registered owner.
      const read = repo.readVerificationFacts(db, address, since);
      const [facts, code, onChainOwner] = await Promise.all([
        read,
        chain ? chain.hasCode(address) : null,
        read.then((f) => (chain && f.owner ? chain.owner(address) : null)),
      ]);
      const owner = facts.owner;
      const addressSanctions = facts.address_lists ?? [];
      const ownerSanctions = owner ? (facts.owner_lists ?? []) : [];
      const score = facts.score ?? 0;
      const results = evaluateChecks(
        {
          known: facts.known,
          registered: facts.is_registered ?? false,
          firstSeenAt: facts.first_seen_at,
          owner,
          ownerChangedAt: facts.owner_changed_at,
          score,
          recentTransactions: facts.recent_transactions ?? 0,
          code,
          onChainOwner,
          addressSanctions,
          ownerSanctions,
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
      // The address and its owner are screened as the sanctions service screens them.
      const screened = [{ address, lists: addressSanctions }];
      if (owner) screened.push({ address: owner, lists: ownerSanctions });
      await repo.insertVerification(db, {
        screenings: screened.map((r) => ({ ...r, sanctioned: r.lists.length > 0 })),
        snapshotId: facts.snapshot_id,
        verification: result,
        now,
      });
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
