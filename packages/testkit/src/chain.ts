import { type Address, createPublicClient, createWalletClient, type Hex, http } from 'viem';

export interface LocalChain {
  url: string;
  accounts: Address[];
  /** Deploys a contract whose `owner()` returns `owner`; returns its address (lowercase). */
  deployOwned(owner: Address): Promise<string>;
  close(): Promise<void>;
}

/**
 * A contract that answers any call — `owner()` included — with `owner` as a 32-byte word:
 * runtime `PUSH20 owner PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN`, behind an initcode that
 * copies the runtime into memory and returns it.
 */
export function ownedContractInitcode(owner: Address): Hex {
  const runtime = `73${owner.slice(2).toLowerCase()}60005260206000f3`;
  const length = (runtime.length / 2).toString(16).padStart(2, '0');
  const init = `60${length}80600b6000396000f3`; // PUSH1 len DUP1 PUSH1 11 PUSH1 0 CODECOPY PUSH1 0 RETURN
  return `0x${init}${runtime}`;
}

/** A real EVM node (Ganache) on a free loopback port. */
export async function startLocalChain(): Promise<LocalChain> {
  // Loaded here, not at the top: every test file imports the kit, and ganache takes ~0.2 s to load.
  const { default: ganache } = await import('ganache');
  const server = ganache.server({
    logging: { quiet: true },
    chain: { chainId: 1337 },
    wallet: { totalAccounts: 3 },
  } as never);
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const transport = http(url);
  const publicClient = createPublicClient({ transport });
  const accounts = (await publicClient.request({ method: 'eth_accounts' } as never)) as Address[];
  const chain = {
    id: 1337,
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  };
  const deployer = accounts[0] as Address;
  const wallet = createWalletClient({ transport, chain, account: deployer });
  return {
    url,
    accounts,
    async deployOwned(owner) {
      const hash = await wallet.sendTransaction({ data: ownedContractInitcode(owner) });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      if (!receipt.contractAddress) throw new Error('deployment created no contract');
      return receipt.contractAddress.toLowerCase();
    },
    close: () => server.close(),
  };
}
