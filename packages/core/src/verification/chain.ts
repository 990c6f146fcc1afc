import {
  BaseError,
  CallExecutionError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  getAddress,
  type Hex,
  http,
  InternalRpcError,
  keccak256,
  type PublicClient,
  RpcRequestError,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

const OWNER_ABI = [
  { type: 'function', name: 'owner', inputs: [], outputs: [{ type: 'address' }], stateMutability: 'view' },
] as const;

/**
 * A chain read's answer. `unreachable`: the node did not answer (network, timeout, RPC error),
 * so the check could not run; otherwise the chain answered and refused (e.g. no `owner()`).
 */
export type ChainAnswer<T> = { ok: true; value: T } | { ok: false; reason: string; unreachable: boolean };

/**
 * Whether the chain itself did not answer a contract call. It answered only when the call
 * reverted or returned nothing (no such function, no code); anything else — a refused or reset
 * connection, a timeout, a gateway's page, a rate limit, a node's internal error — did not, and
 * fails closed as `not_run` rather than as a contract that refused. A node's internal error
 * (-32603) reads as a revert to viem; it is one only when it carries revert data.
 */
function unreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return true;
  if (error.walk((e) => e instanceof ContractFunctionZeroDataError)) return false;
  const reverted = error.walk(
    (e) => e instanceof ContractFunctionRevertedError,
  ) as ContractFunctionRevertedError | null;
  if (!reverted) return true;
  const internal = error.walk((e) => (e as { code?: unknown }).code === InternalRpcError.code);
  return internal !== null && reverted.raw === undefined;
}

/** An ERC-20 `Transfer(address indexed from, address indexed to, uint256 value)` event, addresses lowercase. */
export interface TokenTransfer {
  token: string;
  from: string;
  to: string;
  value: bigint;
}

/** A transaction as the chain has it, addresses lowercase: what a recorded transaction is compared with. */
export interface ChainTransaction {
  /** The receipt's status; null while the node knows the transaction but it is not mined. */
  status: 'success' | 'reverted' | null;
  blockNumber: bigint | null;
  from: string;
  /** The recipient or called contract; for a deployment, the contract it created. */
  to: string | null;
  /** Native value sent with it, in wei. */
  value: bigint;
  /** The ERC-20 transfers its receipt logs (none for a reverted or unmined transaction). */
  transfers: TokenTransfer[];
}

/** A log as the indexer reads it. */
export interface ChainLog {
  address: string;
  topics: Hex[];
  data: Hex;
  blockNumber: bigint;
  transactionHash: string;
  logIndex: number;
}

/** The node did not answer (network, timeout, RPC error): nothing can be concluded. */
export class ChainUnavailableError extends Error {
  override name = 'ChainUnavailableError';
}

/**
 * The node answered a log query with an error rather than the logs: most often the range, or its
 * number of logs, is more than it serves (providers cap both). A narrower range may be answered.
 */
export class ChainLogsRefusedError extends ChainUnavailableError {
  override name = 'ChainLogsRefusedError';
}

/** The node answered, and the call it was asked to send would revert: `reason` is the contract's. */
export class ChainCallRevertedError extends Error {
  override name = 'ChainCallRevertedError';
}

/** What the verification, the transaction check and the ERC-8004 indexer read from the chain. */
export interface ChainReader {
  /** Whether bytecode is deployed at the address. */
  hasCode(address: string): Promise<ChainAnswer<boolean>>;
  /** The contract's `owner()`, lowercase. */
  owner(address: string): Promise<ChainAnswer<string>>;
  /** The transaction and its receipt; `value: null` when the chain has no transaction with this hash. */
  transaction(hash: string): Promise<ChainAnswer<ChainTransaction | null>>;
  /** The node's chain id (read once). Throws ChainUnavailableError. */
  chainId(): Promise<number>;
  /** The latest block number. Throws ChainUnavailableError. */
  blockNumber(): Promise<bigint>;
  /** A block's hash; null when the chain has no such block. Throws ChainUnavailableError. */
  blockHash(number: bigint): Promise<string | null>;
  /**
   * The logs of these contracts in the inclusive block range, in chain order. Throws
   * ChainLogsRefusedError when the node answers the query with an error (a range or a result cap),
   * else ChainUnavailableError.
   */
  logs(addresses: string[], fromBlock: bigint, toBlock: bigint): Promise<ChainLog[]>;
  /**
   * Signs a call with `privateKey` and sends it, after checking with `eth_call` that it would not
   * revert; resolves with the transaction hash once the node took it (not mined). Throws
   * ChainCallRevertedError or ChainUnavailableError.
   */
  send(privateKey: Hex, to: string, data: Hex): Promise<string>;
}

/** keccak256("Transfer(address,address,uint256)"), the topic of ERC-20 (and ERC-721) transfers. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** ERC-20 transfers among a receipt's logs: three topics and a 32-byte value (ERC-721 indexes its token id: four). */
export function tokenTransfers(
  logs: ReadonlyArray<{ address: string; topics: readonly string[]; data: string }>,
): TokenTransfer[] {
  const topicAddress = (topic: string) => `0x${topic.slice(26)}`.toLowerCase();
  return logs
    .filter((l) => l.topics.length === 3 && l.topics[0]?.toLowerCase() === TRANSFER_TOPIC && l.data.length === 66)
    .map((l) => ({
      token: l.address.toLowerCase(),
      from: topicAddress(l.topics[1] as string),
      to: topicAddress(l.topics[2] as string),
      value: BigInt(l.data),
    }));
}

/** A "not found" answer is the chain's; anything else thrown is the node's failure. */
const orNullWhen =
  (notFound: new (...args: never[]) => Error) =>
  (error: unknown): null => {
    if (error instanceof notFound) return null;
    throw error;
  };

function reasonOf(error: unknown): string {
  const message =
    error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error);
  return message.split('\n')[0] ?? message;
}

/**
 * A viem client on `rpcUrl`, or null when no chain is configured. A read that has not answered
 * within `timeoutMs` is given up (no retry, so the bound is what CHAIN_TIMEOUT_MS says) and its
 * check is reported as not run.
 */
export function createChainReader(rpcUrl: string | undefined, timeoutMs: number): ChainReader | null {
  if (!rpcUrl) return null;
  const base = http(rpcUrl, { timeout: timeoutMs, retryCount: 0 });
  // JSON-RPC 2.0: a success carries `result` (null for "not found"). An answer with neither a
  // result nor an error is no answer: viem would pass `undefined` on, read as "no code" or "no
  // such transaction".
  const transport: typeof base = (options) => {
    const t = base(options);
    return {
      ...t,
      request: (async (args: { method: string }, opts?: unknown) => {
        const result = await (t.request as (a: unknown, o?: unknown) => Promise<unknown>)(args, opts);
        if (result === undefined) throw new Error(`${args.method}: the node answered without a result`);
        return result;
      }) as typeof t.request,
    };
  };
  const client: PublicClient = createPublicClient({ transport });
  let chainId: Promise<number> | undefined;
  const unavailable = (error: unknown) => new ChainUnavailableError(`chain read failed: ${reasonOf(error)}`);
  // One signer's transactions go out one at a time: each takes the nonce the previous one left.
  let sending: Promise<unknown> = Promise.resolve();
  const readChainId = () => {
    chainId ??= client.getChainId().catch((error) => {
      chainId = undefined;
      throw unavailable(error);
    });
    return chainId;
  };
  return {
    async hasCode(address) {
      try {
        // Read raw: viem's getCode passes on whatever `result` held (null, a number, nothing at all).
        const code: unknown = await client.request({ method: 'eth_getCode', params: [getAddress(address), 'latest'] });
        // Only hex data is an answer; anything else is a node (or a proxy) that did not answer.
        if (typeof code !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(code))
          return {
            ok: false,
            reason: `eth_getCode answered ${JSON.stringify(code) ?? 'nothing'}, not bytecode`,
            unreachable: true,
          };
        return { ok: true, value: code !== '0x' };
      } catch (error) {
        return { ok: false, reason: reasonOf(error), unreachable: true };
      }
    },
    async owner(address) {
      try {
        const owner = await client.readContract({
          address: getAddress(address),
          abi: OWNER_ABI,
          functionName: 'owner',
        });
        return { ok: true, value: owner.toLowerCase() };
      } catch (error) {
        return { ok: false, reason: reasonOf(error), unreachable: unreachable(error) };
      }
    },
    async transaction(hash) {
      try {
        const [tx, receipt] = await Promise.all([
          client.getTransaction({ hash: hash as Hex }).catch(orNullWhen(TransactionNotFoundError)),
          client.getTransactionReceipt({ hash: hash as Hex }).catch(orNullWhen(TransactionReceiptNotFoundError)),
        ]);
        if (!tx && !receipt) return { ok: true, value: null };
        // A receipt without its transaction: a node behind a load balancer answering from two states.
        if (!tx) return { ok: false, reason: 'the node returned a receipt but not its transaction', unreachable: true };
        const to = receipt ? (receipt.to ?? receipt.contractAddress ?? null) : tx.to;
        return {
          ok: true,
          value: {
            status: receipt ? receipt.status : null,
            blockNumber: receipt ? receipt.blockNumber : null,
            from: tx.from.toLowerCase(),
            to: to ? to.toLowerCase() : null,
            value: tx.value,
            transfers: receipt ? tokenTransfers(receipt.logs) : [],
          },
        };
      } catch (error) {
        return { ok: false, reason: reasonOf(error), unreachable: true };
      }
    },
    chainId: readChainId,
    async blockNumber() {
      try {
        return await client.getBlockNumber({ cacheTime: 0 });
      } catch (error) {
        throw unavailable(error);
      }
    },
    async blockHash(number) {
      try {
        const block = await client.getBlock({ blockNumber: number });
        return block.hash ? block.hash.toLowerCase() : null;
      } catch (error) {
        if (error instanceof BaseError && /could not be found|not found/i.test(error.shortMessage)) return null;
        throw unavailable(error);
      }
    },
    async logs(addresses, fromBlock, toBlock) {
      try {
        const logs = await client.getLogs({
          address: addresses.map((a) => getAddress(a)),
          fromBlock,
          toBlock,
        });
        return logs
          .filter((l) => !l.removed && l.blockNumber !== null && l.transactionHash !== null && l.logIndex !== null)
          .map((l) => ({
            address: l.address.toLowerCase(),
            topics: l.topics as Hex[],
            data: l.data,
            blockNumber: l.blockNumber as bigint,
            transactionHash: (l.transactionHash as string).toLowerCase(),
            logIndex: l.logIndex as number,
          }))
          .sort((a, b) =>
            a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
          );
      } catch (error) {
        if (error instanceof BaseError && error.walk((e) => e instanceof RpcRequestError) !== null) {
          throw new ChainLogsRefusedError(`eth_getLogs of blocks ${fromBlock}..${toBlock} refused: ${reasonOf(error)}`);
        }
        throw unavailable(error);
      }
    },
    send(privateKey, to, data) {
      const run = async () => {
        const account = privateKeyToAccount(privateKey);
        const target = getAddress(to);
        try {
          await client.call({ account: account.address, to: target, data });
        } catch (error) {
          // The node answered with a JSON-RPC error (the call reverts), or it did not answer at all.
          const transport =
            error instanceof BaseError &&
            error.walk((e) => /HttpRequestError|TimeoutError|SocketClosedError/.test((e as Error)?.name ?? '')) !==
              null;
          if (error instanceof CallExecutionError && !transport) throw new ChainCallRevertedError(reasonOf(error));
          throw unavailable(error);
        }
        try {
          const [id, nonce, gas, fees] = await Promise.all([
            readChainId(),
            client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
            client.estimateGas({ account: account.address, to: target, data }),
            client.estimateFeesPerGas(),
          ]);
          const signed = await account.signTransaction({
            chainId: id,
            type: 'eip1559',
            to: target,
            data,
            nonce,
            gas: (gas * 12n) / 10n,
            maxFeePerGas: fees.maxFeePerGas,
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
          });
          // The transaction's hash is known before it is sent. A node that took it but did not
          // answer in time has it: failing here (a 503, "nothing was done") would make the retry
          // sign another with the next nonce, and the feedback would be given twice.
          const local = keccak256(signed).toLowerCase();
          try {
            const hash = await client.sendRawTransaction({ serializedTransaction: signed });
            return hash.toLowerCase();
          } catch (error) {
            const timedOut =
              error instanceof BaseError && error.walk((e) => (e as Error)?.name === 'TimeoutError') !== null;
            if (timedOut) return local;
            throw error;
          }
        } catch (error) {
          if (error instanceof ChainUnavailableError) throw error;
          throw unavailable(error);
        }
      };
      const result = sending.then(run, run);
      sending = result.catch(() => {});
      return result;
    },
  };
}
