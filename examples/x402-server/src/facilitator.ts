import { x402Facilitator } from '@x402/core/facilitator';
import type { Network, PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator';
import { UptoEvmScheme } from '@x402/evm/upto/facilitator';
import Fastify, { type FastifyInstance } from 'fastify';
import { createWalletClient, type Hex, http, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { localChain } from './chain.ts';

/**
 * A local x402 facilitator: the x402 packages' own facilitator (`x402Facilitator` with the EVM
 * `exact` and `upto` schemes of @x402/evm) behind the three HTTP routes a resource server's
 * `HTTPFacilitatorClient` calls — `GET /supported`, `POST /verify`, `POST /settle` — settling on
 * the chain at `rpcUrl` from the key it is given (which pays the gas).
 */
export interface FacilitatorOptions {
  rpcUrl: string;
  chainId: number;
  privateKey: Hex;
  host?: string;
  port?: number;
}

export interface LocalFacilitator {
  url: string;
  address: string;
  facilitator: x402Facilitator;
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startFacilitator(options: FacilitatorOptions): Promise<LocalFacilitator> {
  const account = privateKeyToAccount(options.privateKey);
  const chain = localChain(options.chainId, options.rpcUrl);
  const client = createWalletClient({ account, chain, transport: http(options.rpcUrl) }).extend(publicActions);
  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) => client.readContract(args as never),
      verifyTypedData: (args) => client.verifyTypedData(args as never),
      writeContract: (args) => client.writeContract(args as never),
      sendTransaction: (args) => client.sendTransaction(args),
      waitForTransactionReceipt: (args) => client.waitForTransactionReceipt({ ...args, pollingInterval: 50 }),
      getCode: (args) => client.getCode(args),
    },
    { confirmationTimeoutMs: 30_000 },
  );
  const network = `eip155:${options.chainId}` as Network;
  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, { signer, networks: network });
  facilitator.register(network, new UptoEvmScheme(signer));

  const app = Fastify({ logger: false });
  type Body = { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements };
  app.get('/supported', async () => facilitator.getSupported());
  app.post<{ Body: Body }>('/verify', async (req, reply) => {
    try {
      return await facilitator.verify(req.body.paymentPayload, req.body.paymentRequirements);
    } catch (error) {
      return reply.code(500).send({ error: error instanceof Error ? error.message : String(error) });
    }
  });
  app.post<{ Body: Body }>('/settle', async (req, reply) => {
    try {
      const result = await facilitator.settle(req.body.paymentPayload, req.body.paymentRequirements);
      // A settlement the scheme refused is an answer with its reason (the client reads it as a failure).
      return result.success ? result : reply.code(400).send(result);
    } catch (error) {
      // Thrown: the outcome may not be known (a node that went away mid-settlement).
      return reply.code(500).send({ error: error instanceof Error ? error.message : String(error) });
    }
  });
  const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  return { url: address, address: account.address.toLowerCase(), facilitator, app, close: () => app.close() };
}
