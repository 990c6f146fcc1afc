import { registerVouchHooks, type VouchHooksOptions } from '@vouch/x402';
import {
  HTTPFacilitatorClient,
  type RoutesConfig,
  x402HTTPResourceServer,
  x402ResourceServer,
} from '@x402/core/server';
import type { Network } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { UptoEvmScheme } from '@x402/evm/upto/server';
import { declarePaymentIdentifierExtension, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import Fastify, { type FastifyInstance } from 'fastify';
import { TOKEN_DOMAIN } from './chain.ts';
import { x402Payments } from './fastify-x402.ts';

/**
 * The example resource server: a small paid API on Fastify. Every paid call goes through x402
 * (PAYMENT-REQUIRED → PAYMENT-SIGNATURE → PAYMENT-RESPONSE) and through Vouch, whose hooks
 * (@vouch/x402) decide about the payer, screen payTo, hold the amount before the payment is
 * verified and capture it once it settled.
 *
 * - `GET /weather` — `exact`: 0.01 vUSD a call, paid to the server's own address.
 * - `POST /summarize` — `upto`: at most 0.05 vUSD; the handler bills 10 units a character of the
 *   text it summarized, and only that is settled (`Settlement-Overrides`).
 * - `GET /sellers/:address/quote` — `exact`, 0.02 vUSD paid straight to the seller in the path (a
 *   marketplace): payTo is whoever the caller names, which is why Vouch screens it.
 */
export interface ServerOptions {
  facilitatorUrl: string;
  chainId: number;
  /** The ERC-20 (EIP-3009) the prices are in. */
  token: string;
  /** Where `/weather` and `/summarize` are paid. */
  payTo: string;
  vouch: VouchHooksOptions;
  logger?: boolean;
}

export const PRICES = { weather: 10_000n, summarizeMax: 50_000n, unitsPerCharacter: 10n, quote: 20_000n };

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const network = `eip155:${options.chainId}` as Network;
  const price = (amount: bigint) => ({ amount: amount.toString(), asset: options.token, extra: { ...TOKEN_DOMAIN } });
  // Every payment may carry a client-chosen identifier (the payment-identifier extension). Vouch
  // does not key on it: the sender picks it and no one signs it (docs/x402.md "One key per payment").
  const extensions = { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) };
  const routes: RoutesConfig = {
    'GET /weather': {
      accepts: { scheme: 'exact', network, payTo: options.payTo, price: price(PRICES.weather), maxTimeoutSeconds: 120 },
      description: 'Today’s forecast',
      mimeType: 'application/json',
      extensions,
    },
    'POST /summarize': {
      accepts: {
        scheme: 'upto',
        network,
        payTo: options.payTo,
        price: price(PRICES.summarizeMax),
        maxTimeoutSeconds: 120,
      },
      description: 'A summary, billed by the character',
      mimeType: 'application/json',
      extensions,
    },
    'GET /sellers/:address/quote': {
      accepts: {
        scheme: 'exact',
        network,
        // The seller named in the path is paid; an invalid one is refused by the route before this.
        payTo: (ctx) => ctx.path.split('/')[2] ?? '',
        price: price(PRICES.quote),
        maxTimeoutSeconds: 120,
      },
      description: 'A quote from a seller, paid to the seller',
      mimeType: 'application/json',
      extensions,
    },
  };

  const resourceServer = new x402ResourceServer(
    new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: 30_000 }),
  )
    .register(network, new ExactEvmScheme())
    .register(network, new UptoEvmScheme());
  const app = Fastify({ logger: options.logger ?? true });
  const hooks = registerVouchHooks(resourceServer, { logger: app.log, ...options.vouch });
  // A capture or record of a settled payment still being sent again to Vouch is finished first.
  app.addHook('onClose', () => hooks.idle());
  const httpServer = new x402HTTPResourceServer(resourceServer, routes);
  await httpServer.initialize();

  app.get('/health', async () => ({ ok: true }));

  // Malformed sellers are refused before any payment is asked for.
  app.addHook('onRequest', async (req, reply) => {
    const seller = /^\/sellers\/([^/]+)\/quote/.exec(req.url)?.[1];
    if (seller !== undefined && !ADDRESS.test(seller))
      return reply.code(400).send({ error: 'the seller must be an EVM address (0x and 40 hex digits)' });
  });
  x402Payments(app, httpServer);

  app.get('/weather', async () => ({ city: 'Lisbon', forecast: 'sunny', high: 24, low: 16 }));

  app.post<{ Body: { text?: unknown } }>('/summarize', async (req, reply) => {
    const text = typeof req.body?.text === 'string' ? req.body.text : '';
    if (!text) return reply.code(400).send({ error: 'text (a non-empty string) is required' });
    const billed = BigInt(Math.min(text.length, 1_000_000)) * PRICES.unitsPerCharacter;
    const amount = billed < PRICES.summarizeMax ? billed : PRICES.summarizeMax;
    // What was used is settled, never more than the payer signed for (`upto`).
    reply.header('settlement-overrides', JSON.stringify({ amount: amount.toString() }));
    return {
      summary: `${text.slice(0, 40)}${text.length > 40 ? '…' : ''}`,
      characters: text.length,
      billed: amount.toString(),
    };
  });

  app.get<{ Params: { address: string } }>('/sellers/:address/quote', async (req) => ({
    seller: req.params.address.toLowerCase(),
    quote: '42 widgets at 1.00 vUSD each',
  }));

  return app;
}
