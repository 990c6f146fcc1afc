import {
  BaseError,
  ContractFunctionExecutionError,
  createPublicClient,
  getAddress,
  http,
  type PublicClient,
} from 'viem';

const OWNER_ABI = [
  { type: 'function', name: 'owner', inputs: [], outputs: [{ type: 'address' }], stateMutability: 'view' },
] as const;

/**
 * A chain read's answer. `unreachable`: the node did not answer (network, timeout, RPC error),
 * so the check could not run; otherwise the chain answered and refused (e.g. no `owner()`).
 */
export type ChainAnswer<T> = { ok: true; value: T } | { ok: false; reason: string; unreachable: boolean };

/** Whether the chain itself answered: a reverted or empty contract call did; a transport error did not. */
function unreachable(error: unknown): boolean {
  if (error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionExecutionError)) {
    const cause = (error.walk() as Error | undefined)?.name ?? '';
    return /HttpRequestError|TimeoutError|RpcRequestError|SocketClosedError|WebSocketRequestError/.test(cause);
  }
  return true;
}

/** What the verification reads from the chain. */
export interface ChainReader {
  /** Whether bytecode is deployed at the address. */
  hasCode(address: string): Promise<ChainAnswer<boolean>>;
  /** The contract's `owner()`, lowercase. */
  owner(address: string): Promise<ChainAnswer<string>>;
}

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
  const client: PublicClient = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 0 }) });
  return {
    async hasCode(address) {
      try {
        const code = await client.getCode({ address: getAddress(address) });
        return { ok: true, value: code !== undefined && code !== '0x' };
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
  };
}
