import type { DB, Kysely } from '@vouch/db';
import { type Grade, gradeFor } from '../agents/agents.model.ts';
import type { EventsService } from '../events/events.service.ts';
import type { Screening } from '../sanctions/sanctions.repository.ts';
import type { SanctionsSource } from '../sanctions/sanctions.service.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import type { ChainReader } from './chain.ts';
import {
  type CheckKey,
  type CheckState,
  checkKeys,
  evaluateChecks,
  stateOf,
  statusDetail,
  statusFor,
  type VerificationFacts,
  type VerificationResult,
  type VerificationStatus,
  type VerificationThresholds,
} from './verification.model.ts';
import * as repo from './verification.repository.ts';

export interface VerificationDeps {
  db: Kysely<DB>;
  clock: Clock;
  chain: Pick<ChainReader, 'hasCode' | 'owner'> | null;
  thresholds: VerificationThresholds;
  /** A status change is announced (verification.completed); none without. */
  events?: EventsService | undefined;
}

const DAY_MS = 86_400_000;
/** Conditional stores of one verification before the last, which stores what it found. */
const MAX_STORE_ATTEMPTS = 3;
/** Addresses whose last facts a process remembers; the one remembered longest ago is forgotten first. */
const REMEMBERED_ADDRESSES = 10_000;

type ChainFact = VerificationFacts['code'];
type OwnerFact = VerificationFacts['onChainOwner'];

export function createVerificationService({ db, clock, chain, thresholds, events }: VerificationDeps) {
  /**
   * The facts each address was last verified with in this process. Verifying it again
   * evaluates them at once and stores in the same statement that reads the facts again,
   * on condition that they are unchanged: one round trip instead of a read and a write.
   * A stale entry costs nothing but the round trip it meant to save: the statement then
   * stores nothing and returns the current facts.
   */
  const remembered = new Map<string, repo.FingerprintedFacts>();
  function remember(address: string, facts: repo.FingerprintedFacts) {
    remembered.delete(address);
    remembered.set(address, facts);
    if (remembered.size > REMEMBERED_ADDRESSES) remembered.delete(remembered.keys().next().value as string);
  }

  function evaluate(
    address: string,
    facts: repo.VerificationFactsRow,
    code: ChainFact,
    onChainOwner: OwnerFact,
    now: Date,
  ): { result: VerificationResult; screenings: Screening[] } {
    const owner = facts.owner;
    const addressSanctions = facts.address_lists ?? [];
    const ownerSanctions = owner ? (facts.owner_lists ?? []) : [];
    const score = facts.score ?? 0;
    const sanctionsList = facts.snapshot_id
      ? {
          name: facts.snapshot_name ?? '',
          snapshotDate: facts.snapshot_date ?? '',
          entries: facts.snapshot_entries ?? 0,
          contentHash: facts.snapshot_hash,
        }
      : null;
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
        sanctionsList,
      },
      thresholds,
      now,
    );
    const checks = Object.fromEntries(checkKeys.map((k) => [k, results[k].passed])) as Record<CheckKey, boolean>;
    const checkDetails = Object.fromEntries(checkKeys.map((k) => [k, results[k].detail])) as Record<CheckKey, string>;
    const checkStates = Object.fromEntries(checkKeys.map((k) => [k, stateOf(results[k])])) as Record<
      CheckKey,
      CheckState
    >;
    const passed = checkKeys.filter((k) => checks[k]).length;
    const notRun = checkKeys.filter((k) => checkStates[k] === 'not_run').length;
    const status = statusFor(passed);
    // The address and its owner are screened as the sanctions service screens them.
    const screened = [{ address, lists: addressSanctions }];
    if (owner) screened.push({ address: owner, lists: ownerSanctions });
    return {
      result: {
        address,
        status,
        grade: gradeFor(score),
        score,
        checks,
        checkDetails,
        checkStates,
        passed,
        total: checkKeys.length - notRun,
        notRun,
        statusDetail: statusDetail(status, checkStates),
        sanctionsList,
        verifiedAt: toUnixSeconds(now),
      },
      screenings: screened.map((r) => ({ ...r, sanctioned: r.lists.length > 0 })),
    };
  }

  return {
    /**
     * Runs the 8 checks on any well-formed address and stores the result. The bytecode
     * read starts at once; owner() is asked once the facts say the agent has an owner.
     * An address verified before: its remembered facts are evaluated and stored in one
     * statement if still current. Otherwise (or when they changed): the facts read, then
     * evaluated and stored. Either way the store is conditional on the facts it was evaluated
     * from: a list imported or a transaction recorded while the chain was read makes it
     * evaluate the current facts again, so a verification never lands as the latest with facts
     * that had already changed when it was stored. Facts that keep changing (an agent recording
     * without pause) are stored as found on the last attempt.
     */
    async verify(address: string): Promise<VerificationResult> {
      const now = clock();
      const since = new Date(now.getTime() - thresholds.activityWindowDays * DAY_MS);
      const code = chain ? chain.hasCode(address) : null;
      // Awaited below; a reader that rejects instead of answering must not go unhandled meanwhile.
      code?.catch(() => {});
      let ownerRead: Promise<OwnerFact> | undefined;
      const onChainOwner = (facts: repo.VerificationFactsRow) => {
        if (!chain || !facts.owner) return null;
        ownerRead ??= chain.owner(address);
        return ownerRead;
      };

      let facts = remembered.get(address) ?? (await repo.readVerificationFacts(db, address, since));
      for (let attempt = 1; ; attempt++) {
        const [codeFact, ownerFact] = await Promise.all([code, onChainOwner(facts)]);
        const { result, screenings } = evaluate(address, facts, codeFact, ownerFact, now);
        const outcome = await repo.storeVerification(db, {
          since,
          expected: attempt < MAX_STORE_ATTEMPTS ? facts.fingerprint : null,
          screenings,
          snapshotId: facts.snapshot_id,
          verification: result,
          now,
          events: events?.stamp(now),
        });
        if (outcome.stored) {
          remember(address, facts);
          if (outcome.announced) events?.committed();
          return result;
        }
        // The facts changed since they were read (or remembered): evaluate the current ones.
        facts = outcome.facts;
      }
    },

    /** Stored verifications of an address, newest first. */
    async list(address: string, limit = 50): Promise<VerificationResult[]> {
      const rows = await repo.listVerifications(db, address, limit);
      return rows.map((r) => {
        const checks = r.checks as Record<CheckKey, boolean>;
        // Verifications stored before states were kept: every check counted as run.
        const checkStates =
          (r.check_states as Record<CheckKey, CheckState> | null) ??
          (Object.fromEntries(checkKeys.map((k) => [k, checks[k] ? 'passed' : 'failed'])) as Record<
            CheckKey,
            CheckState
          >);
        const status = r.status as VerificationStatus;
        return {
          address: r.agent,
          status,
          grade: r.grade as Grade,
          score: r.score,
          checks,
          checkDetails: r.check_details as Record<CheckKey, string>,
          checkStates,
          passed: r.passed,
          total: r.total,
          notRun: checkKeys.filter((k) => checkStates[k] === 'not_run').length,
          statusDetail: statusDetail(status, checkStates),
          sanctionsList: (r.sanctions_list as SanctionsSource | null) ?? null,
          verifiedAt: toUnixSeconds(r.created_at),
        };
      });
    },

    latest(address: string, executor: Kysely<DB> = db) {
      return repo.latestVerification(executor, address);
    },
  };
}

export type VerificationService = ReturnType<typeof createVerificationService>;
