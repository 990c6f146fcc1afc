import { randomBytes } from 'node:crypto';
import type { DB, Kysely, Transaction } from '@vouch/db';
import { type Abi, decodeEventLog, encodeFunctionData, type Hex, keccak256, toBytes } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { gradeFor } from '../agents/agents.model.ts';
import { findAgent } from '../agents/agents.repository.ts';
import { assertOwns } from '../agents/agents.service.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { AgentNotFoundError, AgentNotRegisteredError, DomainError, ServiceUnavailableError } from '../shared/errors.ts';
import { inTransaction } from '../shared/transaction.ts';
import {
  ChainCallRevertedError,
  type ChainLog,
  ChainLogsRefusedError,
  type ChainReader,
  ChainUnavailableError,
} from '../verification/chain.ts';
import { giveFeedbackAbi, identityEvents, reputationEvents } from './erc8004.abi.ts';
import {
  type Adjustment,
  adjustmentOf,
  EXPORT_TAG,
  emptyFeedbackCounts,
  type FeedbackFacts,
  type FeedbackVerdict,
  type IndexStatus,
  latestPerClient,
  proofOfPaymentIn,
  SCORE_MODEL_VERSION,
  type WeighedFeedback,
  walletOf,
  weigh,
} from './erc8004.model.ts';
import * as repo from './erc8004.repository.ts';
import { type FetchMode, type FileAnswer, fetchFile } from './files.ts';

export interface Erc8004Options {
  identityRegistry: string;
  reputationRegistry: string;
  startBlock: bigint;
  confirmations: bigint;
  blockRange: bigint;
  intervalMs: number;
  signerKey?: Hex | undefined;
  feedbackBaseUrl?: string | undefined;
  feedbackFetch: FetchMode;
  /** A feedback file not read within this long is given up (tried again in a later run, three times in all). */
  fetchTimeoutMs: number;
  /** A run stops after this long and leaves the rest to the next (default RUN_BUDGET_MS). */
  runBudgetMs?: number | undefined;
}

export interface Erc8004Deps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
  /** The one chain reader; null without CHAIN_RPC_URL (the indexer does not run). */
  chain: ChainReader | null;
  options: Erc8004Options;
  /** Called after a run changed the identities or feedback these Vouch agents stand for. */
  onAgentsChanged?: (agents: string[]) => void;
}

/** A run stops after this long and leaves the rest to the next (the job's lock and the queue stay healthy). */
const RUN_BUDGET_MS = 20_000;
/** Feedback files read per run, and reads of one file before it is given up. */
const FILES_PER_RUN = 20;
const FILE_ATTEMPTS = 3;
/** The index is unavailable when its last successful run is older than this many intervals. */
const STALE_INTERVALS = 5;
/** Feedback entries the breakdown lists (all of them are counted). */
const LISTED_ENTRIES = 100;

const ZERO_HASH = `0x${'0'.repeat(64)}`;

/**
 * A string as anyone may write it on the chain, as PostgreSQL stores text: without NUL characters,
 * which a text column refuses. One such string would otherwise fail its range on every run, and
 * stop the index for good.
 */
const chainText = (value: string) => value.replaceAll('\u0000', '');

export class Erc8004ReorgError extends Error {
  override name = 'Erc8004ReorgError';
}

export interface Identity {
  chainId: number;
  agentId: string;
  agentURI: string;
  owner: string;
  agentWallet: string | null;
}

export interface FeedbackEntry {
  client: string;
  feedbackIndex: string;
  value: string;
  valueDecimals: number;
  tag1: string;
  tag2: string;
  revoked: boolean;
  responses: number;
  proofOfPayment: boolean;
  paymentBacked: boolean;
  clientScore: number | null;
  verdict: FeedbackVerdict;
  weight: number;
}

export interface Evidence {
  status: IndexStatus;
  detail: string;
  chainId: number | null;
  indexedToBlock: string | null;
  headBlock: string | null;
  checkedAt: number | null;
  identity: Identity | null;
  feedback: {
    total: number;
    counted: number;
    revoked: number;
    notARating: number;
    selfRelated: number;
    sanctionedClients: number;
    unknownClients: number;
    paymentBacked: number;
  };
  adjustment: Adjustment;
  entries: FeedbackEntry[];
}

interface IndexState {
  status: IndexStatus;
  detail: string;
  chainId: string | null;
  indexedToBlock: bigint | null;
  headBlock: bigint | null;
  checkedAt: Date | null;
}

/** A registry log decoded with the events Vouch reads; null for any other. */
function decodeLog<const A extends Abi>(abi: A, log: ChainLog) {
  try {
    const event = decodeEventLog({ abi, topics: log.topics as [Hex, ...Hex[]], data: log.data, strict: true });
    return event as typeof event & { args: NonNullable<typeof event.args> };
  } catch {
    return null;
  }
}

/** uint256 as JSON: a number while it is exact, else a string. */
const jsonInteger = (value: string) => (BigInt(value) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value);

/**
 * ERC-8004: an indexer of the Identity and Reputation registries on the configured chain, the
 * evidence its feedback gives the score model, and the feedback Vouch gives (docs/erc8004.md).
 */
export function createErc8004Service({ db, clock, audit, chain, options, onAgentsChanged }: Erc8004Deps) {
  const registries = [
    { kind: 'identity' as const, address: options.identityRegistry },
    { kind: 'reputation' as const, address: options.reputationRegistry },
  ];
  const signer = options.signerKey ? privateKeyToAccount(options.signerKey) : null;

  /**
   * Applies a range of the Identity Registry's events. `touched` gets each identity that changed,
   * and `former` the addresses a transfer or a new wallet took it from: their scores lose it.
   */
  async function applyIdentityLogs(
    trx: Transaction<DB>,
    chainId: number,
    logs: ChainLog[],
    touched: Set<string>,
    former: Set<string>,
  ) {
    let events = 0;
    for (const log of logs) {
      // Another event of the registry (approvals, ERC-4906 updates) decodes to nothing.
      const event = decodeLog(identityEvents, log);
      if (!event) continue;
      const key = { chainId, registry: options.identityRegistry, block: log.blockNumber };
      switch (event.eventName) {
        case 'Transfer': {
          const { from, to, tokenId } = event.args;
          const agentId = tokenId.toString();
          for (const a of await repo.identityHolders(trx, { ...key, agentId })) former.add(a);
          await repo.identityOwner(trx, { ...key, agentId, owner: to.toLowerCase(), minted: BigInt(from) === 0n });
          touched.add(agentId);
          break;
        }
        case 'Registered': {
          const agentId = event.args.agentId.toString();
          await repo.identityRegistered(trx, {
            ...key,
            agentId,
            owner: event.args.owner.toLowerCase(),
            uri: chainText(event.args.agentURI),
          });
          touched.add(agentId);
          break;
        }
        case 'URIUpdated':
          await repo.identityUri(trx, {
            ...key,
            agentId: event.args.agentId.toString(),
            uri: chainText(event.args.newURI),
          });
          break;
        case 'MetadataSet': {
          if (event.args.metadataKey !== 'agentWallet') break;
          const agentId = event.args.agentId.toString();
          for (const a of await repo.identityHolders(trx, { ...key, agentId })) former.add(a);
          await repo.identityWallet(trx, { ...key, agentId, wallet: walletOf(event.args.metadataValue) });
          touched.add(agentId);
          break;
        }
      }
      events++;
    }
    return events;
  }

  async function applyReputationLogs(trx: Transaction<DB>, chainId: number, logs: ChainLog[], touched: Set<string>) {
    let events = 0;
    const base = { chainId, registry: options.reputationRegistry };
    for (const log of logs) {
      const event = decodeLog(reputationEvents, log);
      if (!event) continue;
      const agentId = event.args.agentId.toString();
      const client = event.args.clientAddress.toLowerCase();
      const feedbackIndex = event.args.feedbackIndex.toString();
      switch (event.eventName) {
        case 'NewFeedback': {
          const a = event.args;
          await repo.insertFeedback(trx, {
            ...base,
            agentId,
            client,
            feedbackIndex,
            value: a.value.toString(),
            decimals: a.valueDecimals,
            tag1: chainText(a.tag1),
            tag2: chainText(a.tag2),
            endpoint: chainText(a.endpoint),
            feedbackUri: chainText(a.feedbackURI),
            feedbackHash: a.feedbackHash.toLowerCase(),
            block: log.blockNumber,
            txHash: log.transactionHash,
            logIndex: log.logIndex,
            fileStatus: a.feedbackURI === '' ? 'none' : 'pending',
          });
          break;
        }
        case 'FeedbackRevoked':
          await repo.revokeFeedback(trx, { ...base, agentId, client, feedbackIndex });
          break;
        case 'ResponseAppended':
          await repo.insertResponse(trx, {
            ...base,
            agentId,
            client,
            feedbackIndex,
            responder: event.args.responder.toLowerCase(),
            uri: chainText(event.args.responseURI),
            hash: event.args.responseHash.toLowerCase(),
            block: log.blockNumber,
            txHash: log.transactionHash,
            logIndex: log.logIndex,
          });
          break;
      }
      touched.add(agentId);
      events++;
    }
    return events;
  }

  /** Reads pending feedback files (a few per run) for their proofOfPayment; returns the agent ids whose file was read. */
  async function readFiles(touched: Set<string>): Promise<number> {
    const pending = await repo.pendingFiles(db, FILES_PER_RUN);
    for (const row of pending) {
      // No file may fail the run (it would be read first again, and fail every run after): one that
      // makes the read throw spends an attempt like an unavailable host.
      const answer: FileAnswer = await fetchFile(row.feedback_uri, options.feedbackFetch, options.fetchTimeoutMs).catch(
        (error: unknown) => ({
          ok: false,
          status: 'unavailable',
          detail: error instanceof Error ? error.message : String(error),
          retry: true,
        }),
      );
      const attempts = row.file_attempts + 1;
      const now = clock();
      if (!answer.ok) {
        const again = answer.retry && attempts < FILE_ATTEMPTS;
        await repo.storeFile(db, row, {
          status: again ? 'pending' : answer.status,
          detail: answer.detail,
          proof: null,
          attempts,
          now,
        });
        continue;
      }
      const hash = keccak256(answer.bytes).toLowerCase();
      // A zero feedbackHash commits to nothing (only content-addressed URIs may omit it, and those
      // are not read): the file's proof is not used (docs/checks.md "payment-backed").
      if (hash !== row.feedback_hash) {
        await repo.storeFile(db, row, {
          status: 'hash_mismatch',
          detail:
            row.feedback_hash === ZERO_HASH
              ? 'no feedbackHash commits to the file'
              : `keccak256 of the file is ${hash}, not the feedbackHash`,
          proof: null,
          attempts,
          now,
        });
        continue;
      }
      let json: unknown;
      try {
        json = JSON.parse(answer.bytes.toString('utf8'));
      } catch {
        await repo.storeFile(db, row, { status: 'invalid', detail: 'not JSON', proof: null, attempts, now });
        continue;
      }
      const proof = proofOfPaymentIn(json);
      await repo.storeFile(db, row, {
        status: 'fetched',
        detail: proof ? `proofOfPayment names ${proof.txHash}` : 'no proofOfPayment',
        proof,
        attempts,
        now,
      });
      if (proof) touched.add(row.agent_id);
    }
    return pending.length;
  }

  /**
   * The index's state. `asLastLeft`: as the last run left it, however long ago (the state the
   * scores stored since then were computed in, while no run has come to age it).
   */
  async function indexState(executor: Kysely<DB> = db, asLastLeft = false): Promise<IndexState> {
    const cursors = await repo.currentCursors(executor, [options.identityRegistry, options.reputationRegistry]);
    const none = { chainId: null, indexedToBlock: null, headBlock: null, checkedAt: null };
    if (!chain) {
      return {
        status: 'not_configured',
        detail: 'CHAIN_RPC_URL is unset: ERC-8004 registries are not indexed, and feedback there is not counted',
        ...none,
      };
    }
    if (cursors.length < registries.length) {
      const failed = cursors.find((c) => c.last_error);
      return {
        status: 'not_indexed',
        detail: failed?.last_error
          ? `the index has not run through yet: ${failed.last_error}`
          : 'the indexer has not run yet',
        ...none,
      };
    }
    const chainId = cursors[0]?.chain_id ?? null;
    const indexedTo = cursors.reduce(
      (min, c) => {
        const to = BigInt(c.next_block) - 1n;
        return min === null || to < min ? to : min;
      },
      null as bigint | null,
    );
    const head = cursors.reduce(
      (max, c) => {
        const h = c.head_block === null ? null : BigInt(c.head_block);
        return h !== null && (max === null || h > max) ? h : max;
      },
      null as bigint | null,
    );
    const checkedAt = cursors.reduce(
      (min, c) =>
        c.last_ok_at === null ? null : min === undefined || (min && c.last_ok_at < min) ? c.last_ok_at : min,
      undefined as Date | null | undefined,
    );
    const state = { chainId, indexedToBlock: indexedTo, headBlock: head, checkedAt: checkedAt ?? null };
    const failing = cursors.find((c) => c.last_error_at && (!c.last_ok_at || c.last_error_at >= c.last_ok_at));
    if (failing)
      return { status: 'unavailable', detail: `the last indexer run failed: ${failing.last_error}`, ...state };
    // A run publishes its head when its ranges are through (publishHead): until one has, nothing
    // says how far the index is from the chain's head.
    if (cursors.some((c) => c.head_block === null)) {
      return { status: 'not_indexed', detail: 'the indexer has not run through yet', ...state };
    }
    const now = clock().getTime();
    if (!checkedAt || (!asLastLeft && now - checkedAt.getTime() > STALE_INTERVALS * options.intervalMs)) {
      return {
        status: 'unavailable',
        detail: `the index was last brought up to date ${checkedAt ? `at ${checkedAt.toISOString()}` : 'never'}`,
        ...state,
      };
    }
    const safe = head === null ? null : head - options.confirmations;
    if (safe !== null && indexedTo !== null && indexedTo < safe) {
      return {
        status: 'behind',
        detail: `indexed to block ${indexedTo}, ${safe - indexedTo} block(s) short of the confirmed head ${safe}`,
        ...state,
      };
    }
    return {
      status: 'current',
      detail: `indexed to block ${indexedTo} (head ${head} less ${options.confirmations} confirmations)`,
      ...state,
    };
  }

  /**
   * The identity an address stands for: the one whose verified wallet it is (lowest id), else the
   * one it alone owns of those minted to it. An identity sent to it (a transfer needs no consent
   * of its recipient) does not stand for it until it sets the wallet with its own signature.
   */
  function resolve(address: string, rows: repo.IdentityRow[]): repo.IdentityRow | null {
    const byWallet = rows.filter((r) => r.agent_wallet === address);
    if (byWallet.length) return byWallet[0] as repo.IdentityRow;
    const owned = rows.filter((r) => r.owner === address && r.minted_to === address);
    return owned.length === 1 ? (owned[0] as repo.IdentityRow) : null;
  }

  async function identities(
    addresses: string[],
    chainId: string | null,
    executor: Kysely<DB> = db,
  ): Promise<Map<string, repo.IdentityRow>> {
    const out = new Map<string, repo.IdentityRow>();
    if (chainId === null || addresses.length === 0) return out;
    const rows = await repo.identitiesFor(executor, { chainId, registry: options.identityRegistry, addresses });
    for (const address of addresses) {
      const identity = resolve(address, rows);
      if (identity) out.set(address, identity);
    }
    return out;
  }

  const toIdentity = (row: repo.IdentityRow): Identity => ({
    chainId: Number(row.chain_id),
    agentId: row.agent_id,
    agentURI: row.agent_uri,
    owner: row.owner,
    agentWallet: row.agent_wallet,
  });

  return {
    enabled: chain !== null,
    intervalMs: options.intervalMs,

    /**
     * One indexer run: each registry's logs from its cursor up to head − ERC8004_CONFIRMATIONS, in
     * ranges of ERC8004_BLOCK_RANGE blocks, each applied together with its cursor's move in one
     * transaction that first checks the cursor is still where the range began (a repeated or
     * concurrent run applies nothing twice). A node that fails leaves the cursor where it was.
     * Feedback raises a score only while the index is current: a run after which it is current
     * and was not before, or was and is not (it failed, or ended behind a head that moved on),
     * has every agent standing for a rated identity scored again. "Was" is as the last run left
     * it and as it is now: after a pause of the runs the stored scores may hold adjustments made
     * while it was current, and lack those of scores made once it had aged.
     */
    async index() {
      if (!chain) return { chainId: null, ranges: 0, events: 0, files: 0, caughtUp: true };
      const started = Date.now();
      const budgetMs = options.runBudgetMs ?? RUN_BUDGET_MS;
      const current = async (asLastLeft = false) =>
        (await indexState(db, asLastLeft).catch(() => null))?.status === 'current';
      const [wasCurrent, leftCurrent] = [await current(), await current(true)];
      /** The agents standing for rated identities, scored again as the index starts or stops vouching. */
      const holders = () => repo.agentsWithFeedback(db, options).catch(() => [] as string[]);
      let chainId: number | undefined;
      try {
        chainId = await chain.chainId();
        const head = await chain.blockNumber();
        const safe = head - options.confirmations;
        const touched = new Set<string>();
        const former = new Set<string>();
        let ranges = 0;
        let events = 0;
        let caughtUp = true;
        for (const registry of registries) {
          const cursorKey = { chainId, registry: registry.address };
          let cursor = await repo.ensureCursor(db, {
            ...cursorKey,
            kind: registry.kind,
            startBlock: options.startBlock,
            now: clock(),
          });
          // The blocks one query asks for: halved each time the node refuses a range (its cap on
          // blocks or on logs per query), for the rest of this registry's run.
          let span = options.blockRange;
          for (;;) {
            const next = BigInt(cursor.next_block);
            // The block the cursor stands on is checked on every pass, with nothing new to read
            // too: a reorganization found once stays found (and reported) for as long as the
            // chain disagrees, not only until the head passes the cursor again.
            if (cursor.last_block_hash && next > 0n) {
              const hash = await chain.blockHash(next - 1n);
              // A node that does not know a block it indexed from is behind, not reorganized.
              if (hash === null) {
                throw new ChainUnavailableError(
                  `the node does not know block ${next - 1n}, indexed already: it is behind; the range waits`,
                );
              }
              if (hash !== cursor.last_block_hash) {
                throw new Erc8004ReorgError(
                  `block ${next - 1n}, indexed as ${cursor.last_block_hash}, is ${hash} on the chain now: a reorganization deeper than ERC8004_CONFIRMATIONS; the index stops here`,
                );
              }
            }
            if (next > safe) {
              await repo.touchCursor(db, { ...cursorKey, now: clock() });
              break;
            }
            if (Date.now() - started > budgetMs) {
              caughtUp = false;
              break;
            }
            const last = next + span - 1n < safe ? next + span - 1n : safe;
            let logs: ChainLog[];
            try {
              logs = await chain.logs([registry.address], next, last);
            } catch (error) {
              // The same range asked again would be refused again, run after run: a narrower one
              // is asked instead. A single block refused fails the run as a node that is down does.
              if (error instanceof ChainLogsRefusedError && last > next) {
                span = (last - next + 1n) / 2n;
                continue;
              }
              throw error;
            }
            const lastHash = await chain.blockHash(last);
            // A block at or below the confirmed head the node does not know (a node behind the
            // one that gave the head, behind a load balancer) may have returned too few logs, and
            // a cursor without its hash could not see a reorganization: nothing is applied.
            if (lastHash === null) {
              throw new ChainUnavailableError(
                `the node does not know block ${last}, at or below the confirmed head ${safe}: it is behind; the range waits`,
              );
            }
            const from = cursor.next_block;
            const applied = await db.transaction().execute(async (trx) => {
              const locked = await repo.lockCursor(trx, chainId as number, registry.address);
              if (!locked || locked.next_block !== from) return null;
              const n =
                registry.kind === 'identity'
                  ? await applyIdentityLogs(trx, chainId as number, logs, touched, former)
                  : await applyReputationLogs(trx, chainId as number, logs, touched);
              await repo.advanceCursor(trx, {
                ...cursorKey,
                nextBlock: last + 1n,
                blockHash: lastHash,
                now: clock(),
              });
              return n;
            });
            if (applied === null) {
              // Another run applied this range first: carry on from where it left the cursor.
              // (A cursor deleted meanwhile, for a rebuild, starts again where a new one does.)
              cursor = await repo.ensureCursor(db, {
                ...cursorKey,
                kind: registry.kind,
                startBlock: options.startBlock,
                now: clock(),
              });
              continue;
            }
            ranges++;
            events += applied;
            cursor = { ...cursor, next_block: (last + 1n).toString(), last_block_hash: lastHash };
          }
        }
        await repo.publishHead(db, { chainId, registries: registries.map((r) => r.address), head, now: clock() });
        const files = await readFiles(touched);
        const isCurrent = await current();
        const standingChanged = isCurrent !== wasCurrent || isCurrent !== leftCurrent;
        if (touched.size || former.size || standingChanged) {
          const agents = new Set([
            ...(await repo.agentsOfIdentities(db, {
              chainId,
              registry: options.identityRegistry,
              agentIds: [...touched],
            })),
            ...(await repo.knownAgents(db, [...former])),
            ...(standingChanged ? await holders() : []),
          ]);
          if (agents.size) onAgentsChanged?.([...agents]);
        }
        return { chainId, ranges, events, files, caughtUp };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        // The index stops vouching: scores that hold a positive adjustment are refreshed without
        // it (fails closed), once, as the index goes from current to failing.
        await repo
          .cursorFailed(db, {
            registries: registries.map((r) => r.address),
            error: message,
            now: clock(),
            ...(chainId !== undefined && { chainId }),
          })
          .catch(() => {});
        if (leftCurrent) {
          const agents = await holders();
          if (agents.length) onAgentsChanged?.(agents);
        }
        throw error;
      }
    },

    /** The ERC-8004 identity the address stands for on the indexed chain, or null; read in `executor`'s transaction when given. */
    async identityOf(address: string, executor: Kysely<DB> = db): Promise<Identity | null> {
      const cursors = await repo.currentCursors(executor, [options.identityRegistry]);
      const row = (await identities([address], cursors[0]?.chain_id ?? null, executor)).get(address);
      return row ? toIdentity(row) : null;
    },

    /** What the index says of each agent: its identity, its feedback weighed, and the score adjustment. */
    async evidence(addresses: string[], verifiedOnly: boolean): Promise<Map<string, Evidence>> {
      const state = await indexState();
      const resolved = await identities(addresses, state.chainId);
      const ids = [...new Set([...resolved.values()].map((r) => r.agent_id))];
      const rows =
        ids.length && state.chainId !== null
          ? await repo.feedbackFor(db, {
              chainId: state.chainId,
              identityRegistry: options.identityRegistry,
              reputationRegistry: options.reputationRegistry,
              agentIds: ids,
              verifiedOnly,
            })
          : [];
      const owners = resolved.size ? await repo.ownersOf(db, [...resolved.keys()]) : new Map<string, string | null>();
      // Without an active sanctions list no client is screened: none of them is known to be clean.
      const clientsScreened = rows.every((r) => r.list_active);
      const out = new Map<string, Evidence>();
      for (const address of addresses) {
        const identity = resolved.get(address) ?? null;
        const counts = emptyFeedbackCounts();
        const entries: FeedbackEntry[] = [];
        const weighed: WeighedFeedback[] = [];
        if (identity) {
          const vouchOwner = owners.get(address) ?? null;
          const related = new Set(
            [address, identity.owner, identity.agent_wallet, vouchOwner].filter((a): a is string => !!a),
          );
          const own = rows.filter((r) => r.agent_id === identity.agent_id);
          const facts = own.map((row) => {
            const proof = row.proof_of_payment;
            const paymentBacked =
              row.payment_recorded &&
              proof !== null &&
              (proof.fromAddress === null || proof.fromAddress === row.client) &&
              proof.toAddress !== null &&
              related.has(proof.toAddress);
            const f: FeedbackFacts = {
              client: row.client,
              feedbackIndex: row.feedback_index,
              value: row.value,
              decimals: row.value_decimals,
              tag1: row.tag1,
              tag2: row.tag2,
              revoked: row.revoked,
              responses: row.responses,
              proofOfPayment: proof,
              clientScore: row.client_score,
              clientSanctioned: row.client_sanctioned,
              clientSelfRelated:
                related.has(row.client) ||
                row.client_sibling ||
                (row.client_owner !== null && related.has(row.client_owner)),
              paymentBacked,
            };
            return { row, paymentBacked, proof, weighed: weigh(f) };
          });
          const verdicts = latestPerClient(
            facts.map((x) => ({ client: x.row.client, feedbackIndex: x.row.feedback_index, weighed: x.weighed })),
          );
          facts.forEach(({ row, paymentBacked, proof }, i) => {
            const w = verdicts[i] as WeighedFeedback;
            weighed.push(w);
            counts.total++;
            if (w.verdict === 'counted') counts.counted++;
            if (w.verdict === 'revoked') counts.revoked++;
            if (w.verdict === 'not_a_rating') counts.notARating++;
            if (w.verdict === 'self_related') counts.selfRelated++;
            if (w.verdict === 'sanctioned_client') counts.sanctionedClients++;
            if (w.verdict === 'superseded') counts.superseded++;
            if (w.verdict === 'counted' && row.client_score === null) counts.unknownClients++;
            if (w.verdict === 'counted' && paymentBacked) counts.paymentBacked++;
            entries.push({
              client: row.client,
              feedbackIndex: row.feedback_index,
              value: row.value,
              valueDecimals: row.value_decimals,
              tag1: row.tag1,
              tag2: row.tag2,
              revoked: row.revoked,
              responses: row.responses,
              proofOfPayment: proof !== null,
              paymentBacked,
              clientScore: row.client_score,
              verdict: w.verdict,
              weight: w.weight,
            });
          });
        }
        const unscreened =
          identity && !clientsScreened && rows.some((r) => r.agent_id === identity.agent_id)
            ? '; no sanctions list is active: the clients could not be screened, so only an adjustment that lowers the score is applied'
            : '';
        out.set(address, {
          status: state.status,
          detail:
            (identity || state.status !== 'current'
              ? state.detail
              : 'no ERC-8004 identity is indexed for this address') + unscreened,
          chainId: state.chainId === null ? null : Number(state.chainId),
          indexedToBlock: state.indexedToBlock === null ? null : state.indexedToBlock.toString(),
          headBlock: state.headBlock === null ? null : state.headBlock.toString(),
          checkedAt: state.checkedAt ? toUnixSeconds(state.checkedAt) : null,
          identity: identity ? toIdentity(identity) : null,
          feedback: counts,
          adjustment: adjustmentOf(weighed, state.status, clientsScreened),
          entries: entries.reverse().slice(0, LISTED_ENTRIES),
        });
      }
      return out;
    },

    /**
     * Prepares Vouch's feedback on an agent — `giveFeedback(agentId, score, 1, "vouch-score",
     * modelVersion, endpoint, feedbackURI, feedbackHash)` with the feedback file — and, with
     * ERC8004_SIGNER_KEY, sends it. Only the agent's owner organization exports it.
     */
    async exportFeedback(
      actor: Actor,
      address: string,
      input: { clientAddress?: string | undefined },
      executor?: Kysely<DB>,
    ) {
      // Inside an idempotent request every read goes through its transaction: with one connection
      // (PGlite) a read beside it would wait for the transaction that waits for the read.
      const scope = executor ?? db;
      const agent = await findAgent(scope, address);
      if (!agent) throw new AgentNotFoundError(address);
      if (!agent.is_registered) throw new AgentNotRegisteredError(address);
      assertOwns(actor, agent);
      const cursors = await repo.currentCursors(scope, [options.identityRegistry]);
      const identityRow = (await identities([address], cursors[0]?.chain_id ?? null, scope)).get(address);
      if (!identityRow) {
        throw new DomainError(
          'ERC8004_IDENTITY_NOT_FOUND',
          `no ERC-8004 identity is indexed for ${address} (its agentWallet, or the one identity it owns)`,
        );
      }
      const identity = toIdentity(identityRow);
      const client = signer ? signer.address.toLowerCase() : (input.clientAddress ?? null);
      const now = clock();
      const id = `fb_${randomBytes(12).toString('hex')}`;
      const value = agent.score;
      const decimals = 1;
      const base = options.feedbackBaseUrl;
      const endpoint = base ? `${base}/api/scores/${address}` : '';
      const file: Record<string, unknown> = {
        agentRegistry: `eip155:${identity.chainId}:${options.identityRegistry}`,
        agentId: jsonInteger(identity.agentId),
        ...(client && { clientAddress: `eip155:${identity.chainId}:${client}` }),
        createdAt: now.toISOString(),
        value,
        valueDecimals: decimals,
        tag1: EXPORT_TAG,
        tag2: SCORE_MODEL_VERSION,
        ...(endpoint && { endpoint }),
        vouch: { agent: address, score: agent.score, grade: gradeFor(agent.score), modelVersion: SCORE_MODEL_VERSION },
      };
      const unsigned = JSON.stringify(file);
      const text = signer
        ? JSON.stringify({
            ...file,
            signature: { scheme: 'eip191', signer: client, value: await signer.signMessage({ message: unsigned }) },
          })
        : unsigned;
      const feedbackHash = keccak256(toBytes(text)).toLowerCase();
      const feedbackURI = base
        ? `${base}/api/agents/${address}/erc8004/feedback/${id}`
        : `data:application/json;base64,${Buffer.from(text).toString('base64')}`;
      const data = encodeFunctionData({
        abi: giveFeedbackAbi,
        functionName: 'giveFeedback',
        args: [
          BigInt(identity.agentId),
          BigInt(value),
          decimals,
          EXPORT_TAG,
          SCORE_MODEL_VERSION,
          endpoint,
          feedbackURI,
          feedbackHash as Hex,
        ],
      });
      let txHash: string | null = null;
      if (signer && options.signerKey) {
        if (!chain) throw new ServiceUnavailableError('no chain is configured to send the feedback to');
        // Sent only to the identity as the chain has it now: from an index that is current (one
        // behind or failing may not have seen the identity change hands), through a node on the
        // identity's chain (one on another chain would take the transaction, and this agent id,
        // there).
        const state = await indexState(scope);
        if (state.status !== 'current') {
          throw new ServiceUnavailableError(
            `the ERC-8004 index is ${state.status} (${state.detail}): feedback is not sent while the identity cannot be confirmed`,
          );
        }
        try {
          const nodeChain = await chain.chainId();
          if (nodeChain !== identity.chainId) {
            throw new ServiceUnavailableError(
              `the node at CHAIN_RPC_URL is on chain ${nodeChain}, the identity on chain ${identity.chainId}: nothing is sent`,
            );
          }
          txHash = await chain.send(options.signerKey, options.reputationRegistry, data);
        } catch (error) {
          if (error instanceof ChainCallRevertedError) {
            throw new DomainError('ERC8004_FEEDBACK_REFUSED', `the Reputation Registry refuses it: ${error.message}`);
          }
          if (error instanceof ChainUnavailableError) throw new ServiceUnavailableError(error.message);
          throw error;
        }
      }
      const store = async (trx: Kysely<DB>) => {
        await repo.insertExport(trx, {
          id,
          organizationId: actor.organizationId,
          agent: address,
          chainId: String(identity.chainId),
          registry: options.reputationRegistry,
          agentId: identity.agentId,
          client,
          value,
          decimals,
          tag1: EXPORT_TAG,
          tag2: SCORE_MODEL_VERSION,
          endpoint,
          feedbackUri: feedbackURI,
          feedbackHash,
          file: text,
          txHash,
          now,
        });
        await audit.append(
          trx,
          actor,
          'score.erc8004_feedback',
          address,
          {
            id,
            chainId: identity.chainId,
            agentId: identity.agentId,
            value,
            valueDecimals: decimals,
            feedbackHash,
            txHash,
          },
          now,
        );
      };
      await inTransaction(db, scope, store);
      return {
        id,
        agent: address,
        identity,
        reputationRegistry: options.reputationRegistry,
        clientAddress: client,
        value,
        valueDecimals: decimals,
        tag1: EXPORT_TAG,
        tag2: SCORE_MODEL_VERSION,
        endpoint,
        feedbackURI,
        feedbackHash,
        file: text,
        transaction: { chainId: identity.chainId, to: options.reputationRegistry, data },
        sent: txHash !== null,
        txHash,
        createdAt: toUnixSeconds(now),
      };
    },

    /** A feedback file Vouch gave, exactly as its feedbackHash covers it. */
    async feedbackFile(address: string, id: string): Promise<string> {
      const file = await repo.findExportFile(db, address, id);
      if (file === undefined) throw new DomainError('NOT_FOUND', `no feedback ${id} was given on ${address}`);
      return file;
    },
  };
}

export type Erc8004Service = ReturnType<typeof createErc8004Service>;
