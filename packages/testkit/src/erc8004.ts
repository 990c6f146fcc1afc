import { readFileSync } from 'node:fs';
import { type ChainReader, createErc8004Service, type Erc8004Options } from '@vouch/core';
import {
  type Abi,
  type Address,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  hexToBytes,
  type LocalAccount,
  parseAbi,
} from 'viem';
import type { TestContext } from './app.ts';
import type { LocalChain } from './chain.ts';
import { randomAddress, randomTxHash } from './factories.ts';

/** The test registries' sources, next to this file: written for the tests, with the v2.0.0 events and functions. */
const SOURCES = ['IdentityRegistry.sol', 'ReputationRegistry.sol'];

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

let compiled: Promise<Record<string, CompiledContract>> | undefined;

/** Compiles the test registries with solc from npm (once per process; a few seconds, no network). */
export function compileRegistries(): Promise<Record<string, CompiledContract>> {
  compiled ??= (async () => {
    const { default: solc } = await import('solc');
    const sources = Object.fromEntries(
      SOURCES.map((name) => [name, { content: readFileSync(new URL(`./erc8004/${name}`, import.meta.url), 'utf8') }]),
    );
    const input = {
      language: 'Solidity',
      sources,
      // The v2.0.0 event has too many fields for the legacy code generator's stack.
      settings: {
        viaIR: true,
        optimizer: { enabled: true, runs: 200 },
        outputSelection: { '*': { '*': ['abi', 'evm.bytecode'] } },
      },
    };
    const output = JSON.parse(solc.compile(JSON.stringify(input)));
    const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
    if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'));
    const contracts: Record<string, CompiledContract> = {};
    for (const file of Object.values(output.contracts) as Array<
      Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>
    >) {
      for (const [name, c] of Object.entries(file))
        contracts[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
    }
    return contracts;
  })();
  return compiled;
}

export interface Registries {
  identity: Address;
  reputation: Address;
  identityAbi: Abi;
  reputationAbi: Abi;
  /** Registers an agent from `from` (its owner and first wallet); returns its agent id. */
  register(from: Address, agentURI?: string): Promise<bigint>;
  setAgentURI(from: Address, agentId: bigint, uri: string): Promise<void>;
  /** Points the agent's wallet at `wallet`, signed by that wallet (EIP-712, as the registry checks). */
  setAgentWallet(from: Address, agentId: bigint, wallet: LocalAccount): Promise<void>;
  transfer(from: Address, to: Address, agentId: bigint): Promise<void>;
  giveFeedback(
    from: Address,
    agentId: bigint,
    feedback: {
      value: bigint;
      decimals?: number;
      tag1?: string;
      tag2?: string;
      endpoint?: string;
      feedbackURI?: string;
      feedbackHash?: Hex;
    },
  ): Promise<{ hash: string; status: 'success' | 'reverted' }>;
  revokeFeedback(from: Address, agentId: bigint, index: bigint): Promise<void>;
  appendResponse(from: Address, agentId: bigint, client: Address, index: bigint, uri: string): Promise<void>;
}

const ZERO_HASH = `0x${'0'.repeat(64)}` as Hex;

/** Compiles and deploys an Identity and a Reputation registry on the local chain. */
export async function deployRegistries(chain: LocalChain): Promise<Registries> {
  const contracts = await compileRegistries();
  const id = contracts.IdentityRegistry as CompiledContract;
  const rep = contracts.ReputationRegistry as CompiledContract;
  const identity = await chain.deploy(id.abi, id.bytecode);
  const reputation = await chain.deploy(rep.abi, rep.bytecode, [identity]);
  async function mustWrite(from: Address, contract: Address, abi: Abi, fn: string, args: readonly unknown[]) {
    const receipt = await chain.write(from, contract, abi, fn, args);
    if (receipt.status !== 'success') throw new Error(`${fn} reverted`);
    return receipt;
  }
  return {
    identity,
    reputation,
    identityAbi: id.abi,
    reputationAbi: rep.abi,
    async register(from, agentURI = '') {
      const receipt = await mustWrite(from, identity, id.abi, 'register', [agentURI]);
      const logs = await chain.client.getTransactionReceipt({ hash: receipt.hash as Hex });
      // Transfer(from 0, to owner, tokenId): the id is the fourth topic.
      const minted = logs.logs.find((l) => l.topics.length === 4);
      return BigInt(minted?.topics[3] as Hex);
    },
    async setAgentURI(from, agentId, uri) {
      await mustWrite(from, identity, id.abi, 'setAgentURI', [agentId, uri]);
    },
    async setAgentWallet(from, agentId, wallet) {
      const block = await chain.client.getBlock();
      const deadline = block.timestamp + 120n;
      const signature = await wallet.signTypedData({
        domain: { name: 'ERC8004IdentityRegistry', version: '1', chainId: chain.chainId, verifyingContract: identity },
        types: {
          AgentWalletSet: [
            { name: 'agentId', type: 'uint256' },
            { name: 'newWallet', type: 'address' },
            { name: 'owner', type: 'address' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'AgentWalletSet',
        message: { agentId, newWallet: wallet.address, owner: from, deadline },
      });
      if (hexToBytes(signature).length !== 65) throw new Error('unexpected signature length');
      await mustWrite(from, identity, id.abi, 'setAgentWallet', [agentId, wallet.address, deadline, signature]);
    },
    async transfer(from, to, agentId) {
      await mustWrite(from, identity, id.abi, 'transferFrom', [from, to, agentId]);
    },
    async giveFeedback(from, agentId, f) {
      const receipt = await chain.write(from, reputation, rep.abi, 'giveFeedback', [
        agentId,
        f.value,
        f.decimals ?? 0,
        f.tag1 ?? '',
        f.tag2 ?? '',
        f.endpoint ?? '',
        f.feedbackURI ?? '',
        f.feedbackHash ?? ZERO_HASH,
      ]);
      return { hash: receipt.hash, status: receipt.status };
    },
    async revokeFeedback(from, agentId, index) {
      await mustWrite(from, reputation, rep.abi, 'revokeFeedback', [agentId, index]);
    },
    async appendResponse(from, agentId, client, index, uri) {
      await mustWrite(from, reputation, rep.abi, 'appendResponse', [agentId, client, index, uri, ZERO_HASH]);
    },
  };
}

const newFeedbackEvent = parseAbi([
  'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
]);

/**
 * A Reputation Registry (v2.0.0) `NewFeedback` log as a node's `eth_getLogs` answers it, tagged
 * `starred`, for a scripted chain: feedback index 1, no decimals, no endpoint.
 */
export function newFeedbackLog(
  registry: string,
  f: {
    agentId: bigint;
    client: string;
    value: bigint;
    uri: string;
    hash: Hex;
    block: bigint;
    logIndex?: number;
    txHash?: string;
  },
): Record<string, unknown> {
  const topics = encodeEventTopics({
    abi: newFeedbackEvent,
    eventName: 'NewFeedback',
    args: { agentId: f.agentId, clientAddress: f.client as Hex, indexedTag1: 'starred' },
  }) as Hex[];
  const data = encodeAbiParameters(
    [
      { type: 'uint64' },
      { type: 'int128' },
      { type: 'uint8' },
      { type: 'string' },
      { type: 'string' },
      { type: 'string' },
      { type: 'string' },
      { type: 'bytes32' },
    ],
    [1n, f.value, 0, 'starred', '', '', f.uri, f.hash],
  );
  return {
    address: registry,
    topics,
    data,
    blockNumber: f.block,
    transactionHash: f.txHash ?? randomTxHash(),
    logIndex: f.logIndex ?? 0,
  };
}

/** The block a `logsChain` has its logs in; its head is at LOGS_CHAIN_HEAD. */
export const LOGS_CHAIN_BLOCK = 40n;
const LOGS_CHAIN_HEAD = 100n;

/**
 * A scripted chain for an indexer test: its head at block 100, each block's hash its number, and
 * one block (LOGS_CHAIN_BLOCK) whose logs of the registry `registry()` names are `logs()`; no
 * other logs. Both are read at each call, so a test can set them once the indexer has named its
 * registries.
 */
export function logsChain(chainId: number, registry: () => string, logs: () => Record<string, unknown>[]): ChainReader {
  return {
    chainId: async () => chainId,
    blockNumber: async () => LOGS_CHAIN_HEAD,
    blockHash: async (n: bigint) => `0x${n.toString(16).padStart(64, '0')}`,
    logs: async (addresses: string[], from: bigint, to: bigint) =>
      addresses[0] === registry() && from <= LOGS_CHAIN_BLOCK && LOGS_CHAIN_BLOCK <= to ? logs() : [],
  } as unknown as ChainReader;
}

/**
 * An ERC-8004 indexer over `chain` on the test app's database and clock, its registries at fresh
 * addresses unless `options` names them: 2 confirmations, ranges of 1,000 blocks, no feedback files.
 */
export function testIndexer(t: TestContext, chain: ChainReader, options: Partial<Erc8004Options> = {}) {
  const settings: Erc8004Options = {
    identityRegistry: randomAddress(),
    reputationRegistry: randomAddress(),
    startBlock: 0n,
    confirmations: 2n,
    blockRange: 1000n,
    intervalMs: 3_600_000,
    feedbackFetch: 'off',
    fetchTimeoutMs: 1000,
    ...options,
  };
  const service = createErc8004Service({
    db: t.database.db,
    clock: () => t.clock.now,
    audit: t.services.audit,
    chain,
    options: settings,
  });
  return { service, identityRegistry: settings.identityRegistry, reputationRegistry: settings.reputationRegistry };
}
