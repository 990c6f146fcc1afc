import { type Address, createPublicClient, createWalletClient, encodeFunctionData, type Hex, http } from 'viem';

export interface LocalChain {
  url: string;
  accounts: Address[];
  /** Deploys a contract whose `owner()` returns `owner`; returns its address (lowercase). */
  deployOwned(owner: Address): Promise<string>;
  /** Sends `value` wei from one of the node's accounts to `to` and waits for it to be mined; returns its hash (lowercase). */
  sendValue(from: Address, to: Address, value: bigint, options?: { gas?: bigint }): Promise<string>;
  /** Deploys a token whose `transfer(to, value)` logs an ERC-20 Transfer from the caller (it keeps no balances). */
  deployToken(): Promise<string>;
  /** Calls the token's `transfer(to, value)` from `from`; returns the mined transaction's hash (lowercase). */
  sendToken(from: Address, token: Address, to: Address, value: bigint): Promise<string>;
  /** Deploys a contract that reverts every call: value sent to it is mined with a reverted receipt. */
  deployReverter(): Promise<string>;
  close(): Promise<void>;
}

/** An initcode that copies `runtime` (at most 255 bytes) into memory and returns it as the contract's code. */
function initcodeFor(runtime: string): Hex {
  const length = (runtime.length / 2).toString(16).padStart(2, '0');
  const init = `60${length}80600b6000396000f3`; // PUSH1 len DUP1 PUSH1 11 PUSH1 0 CODECOPY PUSH1 0 RETURN
  return `0x${init}${runtime}`;
}

/**
 * A contract that answers any call — `owner()` included — with `owner` as a 32-byte word:
 * runtime `PUSH20 owner PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN`, behind an initcode that
 * copies the runtime into memory and returns it.
 */
export function ownedContractInitcode(owner: Address): Hex {
  return initcodeFor(`73${owner.slice(2).toLowerCase()}60005260206000f3`);
}

const TRANSFER_TOPIC = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/**
 * `transfer(address to, uint256 value)` that only logs `Transfer(caller, to, value)`:
 * `PUSH1 0x24 CALLDATALOAD PUSH1 0 MSTORE` (the value as the log's data), then the topics
 * `to` (`PUSH1 4 CALLDATALOAD`), `CALLER` and the event's signature, `PUSH1 32 PUSH1 0 LOG3 STOP`.
 */
const TOKEN_RUNTIME = `602435600052600435337f${TRANSFER_TOPIC}60206000a300`;
/** `PUSH1 0 DUP1 REVERT`. */
const REVERTER_RUNTIME = '600080fd';

const TRANSFER_ABI = [
  {
    type: 'function',
    name: 'transfer',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
    ],
    outputs: [],
    stateMutability: 'nonpayable',
  },
] as const;

/** A real EVM node (Ganache) on a free loopback port, with `accounts` funded, unlocked accounts (default 3). */
export async function startLocalChain(options: { accounts?: number } = {}): Promise<LocalChain> {
  // Loaded here, not at the top: every test file imports the kit, and ganache takes ~0.2 s to load.
  const { default: ganache } = await import('ganache');
  const server = ganache.server({
    logging: { quiet: true },
    chain: { chainId: 1337 },
    wallet: { totalAccounts: options.accounts ?? 3 },
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
  const mined = (hash: Hex) => publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  async function deploy(initcode: Hex) {
    const receipt = await mined(await wallet.sendTransaction({ data: initcode }));
    if (!receipt.contractAddress) throw new Error('deployment created no contract');
    return receipt.contractAddress.toLowerCase();
  }
  return {
    url,
    accounts,
    deployOwned: (owner) => deploy(ownedContractInitcode(owner)),
    async sendValue(from, to, value, options = {}) {
      // An explicit gas limit skips estimation, which would refuse a transaction that reverts.
      const hash = await wallet.sendTransaction({ account: from, to, value, ...(options.gas && { gas: options.gas }) });
      await mined(hash);
      return hash.toLowerCase();
    },
    deployToken: () => deploy(initcodeFor(TOKEN_RUNTIME)),
    async sendToken(from, token, to, value) {
      const data = encodeFunctionData({ abi: TRANSFER_ABI, functionName: 'transfer', args: [to, value] });
      const hash = await wallet.sendTransaction({ account: from, to: token, data });
      await mined(hash);
      return hash.toLowerCase();
    },
    deployReverter: () => deploy(initcodeFor(REVERTER_RUNTIME)),
    close: () => server.close(),
  };
}
