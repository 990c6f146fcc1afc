import { createPublicClient, getAddress, http, type PublicClient } from 'viem';

const OWNER_ABI = [
  { type: 'function', name: 'owner', inputs: [], outputs: [{ type: 'address' }], stateMutability: 'view' },
] as const;

export type ChainAnswer<T> = { ok: true; value: T } | { ok: false; reason: string };

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

/** A viem client on `rpcUrl`, or null when no chain is configured. */
export function createChainReader(rpcUrl: string | undefined, timeoutMs = 3000): ChainReader | null {
  if (!rpcUrl) return null;
  const client: PublicClient = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 1 }) });
  return {
    async hasCode(address) {
      try {
        const code = await client.getCode({ address: getAddress(address) });
        return { ok: true, value: code !== undefined && code !== '0x' };
      } catch (error) {
        return { ok: false, reason: reasonOf(error) };
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
        return { ok: false, reason: reasonOf(error) };
      }
    },
  };
}
