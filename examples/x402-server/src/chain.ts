import { readFileSync } from 'node:fs';
import {
  type Abi,
  type Account,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  maxUint256,
} from 'viem';

/**
 * The local chain of the example: anvil (the npm package `@foundry-rs/anvil`, whose binary comes
 * in its platform package), a USDC-like token with EIP-3009 for the `exact` scheme, and Permit2
 * with the x402 `upto` proxy at their canonical addresses for the `upto` scheme — all compiled
 * here with solc from npm, from `contracts/`. Nothing is downloaded.
 */

/** Canonical addresses the x402 EVM packages use (@x402/evm `PERMIT2_ADDRESS`, `x402UptoPermit2ProxyAddress`). */
export const PERMIT2_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
export const UPTO_PROXY_ADDRESS: Address = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';

/** anvil's well-known development mnemonic: its accounts' keys, for the local chain only. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';

export function localChain(chainId: number, url: string): Chain {
  return {
    id: chainId,
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  };
}

interface Compiled {
  abi: Abi;
  bytecode: Hex;
}

let compiled: Promise<Record<string, Compiled>> | undefined;

/** Compiles `contracts/*.sol` with solc from npm (once per process; a few seconds, no network). */
export function compileContracts(): Promise<Record<string, Compiled>> {
  compiled ??= (async () => {
    const { default: solc } = await import('solc');
    const names = ['TestUSD.sol', 'Permit2.sol', 'UptoPermit2Proxy.sol'];
    const sources = Object.fromEntries(
      names.map((name) => [name, { content: readFileSync(new URL(`../contracts/${name}`, import.meta.url), 'utf8') }]),
    );
    const input = {
      language: 'Solidity',
      sources,
      settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode'] } } },
    };
    const output = JSON.parse(solc.compile(JSON.stringify(input)));
    const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
    if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'));
    const contracts: Record<string, Compiled> = {};
    for (const file of Object.values(output.contracts) as Array<
      Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>
    >)
      for (const [name, c] of Object.entries(file))
        contracts[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
    return contracts;
  })();
  return compiled;
}

export const TOKEN_ABI = [
  {
    type: 'function',
    name: 'mint',
    inputs: [{ type: 'address' }, { type: 'uint256' }],
    outputs: [],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'approve',
    inputs: [{ type: 'address' }, { type: 'uint256' }],
    outputs: [{ type: 'bool' }],
    stateMutability: 'nonpayable',
  },
  {
    type: 'function',
    name: 'balanceOf',
    inputs: [{ type: 'address' }],
    outputs: [{ type: 'uint256' }],
    stateMutability: 'view',
  },
] as const;

/** What the token's EIP-712 domain is named: the x402 `exact` requirements carry it in `extra`. */
export const TOKEN_DOMAIN = { name: 'Vouch Test USD', version: '2' } as const;

export interface PaymentContracts {
  token: Address;
}

/**
 * Deploys the token (minted by `deployer`), and Permit2 and the upto proxy at their canonical
 * addresses: deployed anywhere, then their code is set at the canonical address
 * (`anvil_setCode`) — neither keeps state from its constructor, so the code is all they need.
 */
export async function deployPaymentContracts(
  url: string,
  chainId: number,
  deployer: Account | Address,
): Promise<PaymentContracts> {
  const chain = localChain(chainId, url);
  const transport = http(url);
  const publicClient = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport });
  const contracts = await compileContracts();
  async function deploy(name: string): Promise<Address> {
    const c = contracts[name];
    if (!c) throw new Error(`${name} was not compiled`);
    const hash = await wallet.deployContract({ abi: c.abi, bytecode: c.bytecode, account: deployer, chain });
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (!receipt.contractAddress) throw new Error(`${name}: no contract created`);
    return receipt.contractAddress;
  }
  async function place(name: string, at: Address) {
    const code = await publicClient.getCode({ address: await deploy(name) });
    if (!code) throw new Error(`${name}: no code`);
    await publicClient.request({ method: 'anvil_setCode', params: [at, code] } as never);
  }
  const token = await deploy('TestUSD');
  await place('Permit2', PERMIT2_ADDRESS);
  await place('UptoPermit2Proxy', UPTO_PROXY_ADDRESS);
  return { token };
}

/**
 * Gives `payer` `amount` of the token and lets Permit2 pull from it (the one-time approval an
 * `upto` payer makes; `exact` needs none). `payer` must hold ether for that approval.
 */
export async function fundPayer(
  url: string,
  chainId: number,
  token: Address,
  minter: Account | Address,
  payer: Account,
  amount: bigint,
): Promise<void> {
  const chain = localChain(chainId, url);
  const transport = http(url);
  const publicClient = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport });
  const mined = async (hash: Hex) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
  };
  await mined(
    await wallet.writeContract({
      address: token,
      abi: TOKEN_ABI,
      functionName: 'mint',
      args: [payer.address, amount],
      account: minter,
      chain,
    }),
  );
  await mined(
    await wallet.writeContract({
      address: token,
      abi: TOKEN_ABI,
      functionName: 'approve',
      args: [PERMIT2_ADDRESS, maxUint256],
      account: payer,
      chain,
    }),
  );
}

/** The token balance of `owner`. */
export async function balanceOf(url: string, token: Address, owner: Address): Promise<bigint> {
  const client = createPublicClient({ transport: http(url) });
  return client.readContract({ address: token, abi: TOKEN_ABI, functionName: 'balanceOf', args: [owner] });
}
