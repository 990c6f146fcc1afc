import { randomBytes } from 'node:crypto';
import { startEmbeddedApi, startLocalChain } from '@vouch/testkit';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { type Hex, toHex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { balanceOf, DEV_MNEMONIC, deployPaymentContracts, fundPayer } from './chain.ts';
import { startFacilitator } from './facilitator.ts';
import { createPayer } from './payer.ts';
import { buildServer } from './server.ts';
import { createShop, read, registerAgentWithBudget } from './vouch-admin.ts';

/**
 * `npm run example:x402`: the whole thing on one machine, no network — a local chain (anvil) with
 * the token, Vouch (`npm start`: embedded database in a temporary directory), a local facilitator,
 * the paid Fastify server, and an agent that pays for calls. It prints what happened in Vouch and
 * on the chain, then stops everything it started.
 */

const CHAIN_ID = 1337;
const devKey = (i: number): Hex => toHex(mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!);
const devAddress = (i: number) => mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i }).address.toLowerCase();
/** An address on the bundled OFAC list (data/sanctions/ofac_sdn_ETH.txt). */
const SANCTIONED_SELLER = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const vUSD = (units: bigint | string) => `${(Number(units) / 1e6).toFixed(4)} vUSD`;

const say = (line: string) => console.log(line);
const step = (title: string) => say(`\n── ${title}`);

/**
 * Vouch as `npm start` runs it, on the embedded database in a fresh directory (the bundle, started
 * by @vouch/testkit as the tests start it), its warnings shown on this console.
 */
async function startVouch(env: Record<string, string>): Promise<{ url: string; stop(): Promise<void> }> {
  const api = await startEmbeddedApi({ HOST: '127.0.0.1', REDIS_URL: '', LOG_LEVEL: 'warn', ...env }, '/health', {
    onOutput: (chunk) => process.stderr.write(chunk),
  });
  return {
    url: api.base,
    async stop() {
      if (api.server.child.exitCode === null) api.server.child.kill('SIGTERM');
      await api.server.exited;
      api.remove();
    },
  };
}

const stops: Array<() => Promise<unknown>> = [];

async function main() {
  step('Local chain');
  // anvil as the tests run it (@vouch/testkit), with its ten development accounts (chain id 1337).
  const anvil = await startLocalChain({ accounts: 10 });
  if (anvil.chainId !== CHAIN_ID) throw new Error(`the local chain has id ${anvil.chainId}, not ${CHAIN_ID}`);
  stops.push(() => anvil.close());
  const deployer = devAddress(0) as Hex;
  const { token } = await deployPaymentContracts(anvil.url, CHAIN_ID, deployer);
  const payerAccount = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 2 });
  await fundPayer(anvil.url, CHAIN_ID, token, deployer, payerAccount, 1_000_000n);
  const shop = devAddress(3);
  const asset = `eip155:${CHAIN_ID}/erc20:${token.toLowerCase()}`;
  say(
    `anvil ${anvil.url}; token ${token} (${asset}); the agent ${payerAccount.address.toLowerCase()} holds ${vUSD(1_000_000n)}`,
  );

  step('Vouch (embedded database), the shop’s organization and keys, the agent and its budget');
  const adminKey = randomBytes(24).toString('hex');
  const vouch = await startVouch({ AUTH: 'on', ADMIN_API_KEY: adminKey, CHAIN_RPC_URL: anvil.url });
  stops.push(() => vouch.stop());
  const keys = await createShop(vouch.url, adminKey, 'shop');
  const agent = payerAccount.address.toLowerCase();
  await registerAgentWithBudget(vouch.url, keys.manage, agent, { asset, dailyLimit: '80000', monthlyLimit: '1000000' });
  say(`Vouch ${vouch.url}; budget of ${agent}: ${vUSD(80_000n)} a day in ${asset}`);

  step('Facilitator and paid server');
  const facilitator = await startFacilitator({ rpcUrl: anvil.url, chainId: CHAIN_ID, privateKey: devKey(1) });
  stops.push(() => facilitator.close());
  const app = await buildServer({
    facilitatorUrl: facilitator.url,
    chainId: CHAIN_ID,
    token,
    payTo: shop,
    logger: false,
    vouch: { url: vouch.url, apiKey: keys.server, logger: { info: () => {}, warn: () => {}, error: () => {} } },
  });
  const server = await app.listen({ host: '127.0.0.1', port: 0 });
  stops.push(() => app.close());
  say(`facilitator ${facilitator.url} (settles from ${facilitator.address}); server ${server}`);

  const payer = createPayer({ privateKey: devKey(2), chainId: CHAIN_ID, token });
  const show = async (label: string, res: Response) => {
    const paid = res.headers.get('payment-response');
    const settlement = paid ? decodePaymentResponseHeader(paid) : null;
    const required = res.headers.get('payment-required');
    const refusal = required
      ? (JSON.parse(Buffer.from(required, 'base64').toString()) as { error?: string }).error
      : null;
    say(
      `${label}: ${res.status}${settlement ? ` — settled in ${settlement.transaction}` : ''}${refusal ? ` — refused: ${refusal}` : ''}`,
    );
    say(`   ${(await res.text()).slice(0, 160)}`);
  };

  step('An agent pays for calls');
  await show('GET /weather (exact, 0.01 vUSD)', await payer.fetch(`${server}/weather`));
  await show(
    'POST /summarize (upto 0.05 vUSD, billed by the character)',
    await payer.fetch(`${server}/summarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x402 lets an agent pay per call; Vouch decides whether it may.' }),
    }),
  );
  await show(
    `GET /sellers/${devAddress(4)}/quote (0.02 vUSD to the seller)`,
    await payer.fetch(`${server}/sellers/${devAddress(4)}/quote`),
  );
  await show(
    `GET /sellers/${SANCTIONED_SELLER}/quote (a sanctioned seller)`,
    await payer.fetch(`${server}/sellers/${SANCTIONED_SELLER}/quote`),
  );
  await show(
    'POST /summarize again (its hold of 0.05 vUSD would pass the day’s budget)',
    await payer.fetch(`${server}/summarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'one more' }),
    }),
  );

  step('The same agent, checking its own budget before it signs (onBeforePaymentCreation)');
  const careful = createPayer({
    privateKey: devKey(2),
    chainId: CHAIN_ID,
    token,
    budgetCheck: { url: vouch.url, apiKey: keys.read },
  });
  try {
    await careful.fetch(`${server}/summarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'one more' }),
    });
  } catch (error) {
    say(`not paid: ${error instanceof Error ? error.message : String(error)}`);
  }

  step('What Vouch and the chain say');
  const budget = await read<{ dailySpent: string; dailyHeld: string; dailyRemaining: string }>(
    vouch.url,
    keys.read,
    `/api/budgets/${agent}?asset=${encodeURIComponent(asset)}`,
  );
  say(
    `budget: spent ${vUSD(budget.dailySpent)}, held ${vUSD(budget.dailyHeld)}, ${vUSD(budget.dailyRemaining)} left today`,
  );
  const { spends } = await read<{
    spends: Array<{
      kind: string;
      amount: string;
      accepted: boolean;
      reason: string | null;
      counterparty: string | null;
    }>;
  }>(vouch.url, keys.read, `/api/budgets/${agent}/spends?asset=${encodeURIComponent(asset)}`);
  for (const s of spends.reverse())
    say(
      `  ledger: ${s.kind} ${vUSD(s.amount)} ${s.accepted ? 'accepted' : `refused (${s.reason})`} → ${s.counterparty}`,
    );
  // The chain check of a recorded transaction runs after the answer: give it a moment.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const { transactions } = await read<{ transactions: Array<{ txHash: string; amount: string; chainStatus: string }> }>(
    vouch.url,
    keys.read,
    `/api/transactions/${agent}`,
  );
  for (const t of transactions.reverse()) say(`  recorded: ${t.txHash} ${vUSD(t.amount)} (chain: ${t.chainStatus})`);
  say(
    `on the chain: the agent holds ${vUSD(await balanceOf(anvil.url, token, payerAccount.address))}, the shop ${vUSD(await balanceOf(anvil.url, token, shop as Hex))}`,
  );
}

try {
  await main();
  say('\ndone.');
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
}
