import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

export interface LocalChain {
  url: string;
  chainId: number;
  accounts: Address[];
  /** A viem client on the node (reads, receipts). */
  client: PublicClient;
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
  /** Deploys compiled bytecode with constructor arguments; returns its address (lowercase). */
  deploy(abi: Abi, bytecode: Hex, args?: readonly unknown[]): Promise<Address>;
  /** Calls a contract from one of the node's accounts and waits for it to be mined; returns the receipt. */
  write(
    from: Address,
    contract: Address,
    abi: Abi,
    functionName: string,
    args?: readonly unknown[],
  ): Promise<{ hash: string; blockNumber: bigint; status: 'success' | 'reverted' }>;
  /** A fresh private key whose account holds 100 ether. */
  fundedKey(): Promise<Hex>;
  /** Mines `blocks` empty blocks. */
  mine(blocks: number): Promise<void>;
  /** The current block number. */
  blockNumber(): Promise<bigint>;
  /** Saves the chain's state; `revert` goes back to it (and drops every block after it): a reorganization. */
  snapshot(): Promise<Hex>;
  revert(id: Hex): Promise<void>;
  /** Stops the node and waits for it to be gone. */
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

/** The anvil binary of the npm package `@foundry-rs/anvil` for this platform (no download at run time). */
function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const name = `@foundry-rs/anvil-${process.platform}-${arch}/bin/anvil${process.platform === 'win32' ? '.exe' : ''}`;
  try {
    return createRequire(import.meta.url).resolve(name);
  } catch {
    throw new Error(`${name} is not installed: npm ci installs it with @foundry-rs/anvil on this platform`);
  }
}

/** Starts anvil on a free loopback port and resolves with its URL once it listens. */
function startAnvil(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(anvilBinary(), ['--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`anvil did not start within 30 s:\n${output.slice(-2000)}`)), 30_000);
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    const onData = (chunk: Buffer) => {
      output += chunk;
      const listening = /Listening on (127\.0\.0\.1:\d+)/.exec(output);
      if (listening) {
        clearTimeout(timer);
        // Nothing more is read: the node's log would otherwise fill the pipe.
        child.stdout?.removeListener('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ child, url: `http://${listening[1]}` });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`anvil exited (${code}) before listening:\n${output.slice(-2000)}`)));
  });
}

/**
 * A real EVM node — anvil, from the npm package `@foundry-rs/anvil` — on a free loopback port,
 * with `accounts` funded, unlocked accounts (default 3), mining each transaction as it arrives.
 */
export async function startLocalChain(options: { accounts?: number } = {}): Promise<LocalChain> {
  const chainId = 1337;
  const { child, url } = await startAnvil(['--accounts', String(options.accounts ?? 3), '--chain-id', String(chainId)]);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const transport = http(url);
  const publicClient = createPublicClient({ transport });
  const accounts = (await publicClient.request({ method: 'eth_accounts' } as never)) as Address[];
  const chain = {
    id: chainId,
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  };
  const deployer = accounts[0] as Address;
  const wallet: WalletClient = createWalletClient({ transport, chain, account: deployer });
  const mined = (hash: Hex) => publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  async function deployCode(initcode: Hex) {
    const receipt = await mined(await wallet.sendTransaction({ data: initcode, account: deployer, chain }));
    if (!receipt.contractAddress) throw new Error('deployment created no contract');
    return receipt.contractAddress.toLowerCase();
  }
  const rpc = (method: string, params: unknown[] = []) => publicClient.request({ method, params } as never);
  return {
    url,
    chainId,
    accounts,
    client: publicClient,
    deployOwned: (owner) => deployCode(ownedContractInitcode(owner)),
    async sendValue(from, to, value, options = {}) {
      // An explicit gas limit skips estimation, which would refuse a transaction that reverts.
      const hash = await wallet.sendTransaction({
        account: from,
        chain,
        to,
        value,
        ...(options.gas && { gas: options.gas }),
      });
      await mined(hash);
      return hash.toLowerCase();
    },
    deployToken: () => deployCode(initcodeFor(TOKEN_RUNTIME)),
    async sendToken(from, token, to, value) {
      const data = encodeFunctionData({ abi: TRANSFER_ABI, functionName: 'transfer', args: [to, value] });
      const hash = await wallet.sendTransaction({ account: from, chain, to: token, data });
      await mined(hash);
      return hash.toLowerCase();
    },
    deployReverter: () => deployCode(initcodeFor(REVERTER_RUNTIME)),
    async deploy(abi, bytecode, args = []) {
      const hash = await wallet.deployContract({ abi, bytecode, args, account: deployer, chain });
      const receipt = await mined(hash);
      if (!receipt.contractAddress) throw new Error('deployment created no contract');
      return receipt.contractAddress.toLowerCase() as Address;
    },
    async write(from, contract, abi, functionName, args = []) {
      const data = encodeFunctionData({ abi, functionName, args } as never);
      // A fixed gas limit: a call the contract refuses is mined as reverted instead of refused by estimation.
      const hash = await wallet.sendTransaction({ account: from, chain, to: contract, data, gas: 3_000_000n });
      const receipt = await mined(hash);
      return { hash: hash.toLowerCase(), blockNumber: receipt.blockNumber, status: receipt.status };
    },
    async fundedKey() {
      const key = generatePrivateKey();
      await rpc('anvil_setBalance', [privateKeyToAccount(key).address, `0x${(100n * 10n ** 18n).toString(16)}`]);
      return key;
    },
    async mine(blocks) {
      await rpc('anvil_mine', [`0x${blocks.toString(16)}`]);
    },
    blockNumber: () => publicClient.getBlockNumber({ cacheTime: 0 }),
    snapshot: async () => (await rpc('evm_snapshot')) as Hex,
    async revert(id) {
      const reverted = await rpc('evm_revert', [id]);
      if (reverted !== true) throw new Error(`evm_revert(${id}) answered ${String(reverted)}`);
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * A JSON-RPC endpoint that answers every call with HTTP 200 and `answer` beside `jsonrpc` and the
 * call's `id`: `{result: null}`, `{error: {...}}`, or `{}` (neither) — a broken node, or a proxy
 * passing on what its upstream gave. `close` stops it.
 */
export async function startJsonRpcStub(answer: Record<string, unknown>): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const { id } = JSON.parse(body || '{}') as { id?: number };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, ...answer }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}
