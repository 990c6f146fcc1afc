import { z } from 'zod';
import { type LocalFacilitator, startFacilitator } from './facilitator.ts';
import { buildServer } from './server.ts';

/**
 * The example server as a process (`npm start -w examples/x402-server`): the paid API and, unless
 * `FACILITATOR_URL` names one, a local facilitator in the same process. Settings are environment
 * variables, read once here.
 */
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be an EVM address');
const env = z
  .object({
    HOST: z.string().default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(4021),
    RPC_URL: z.url(),
    CHAIN_ID: z.coerce.number().int().positive().default(1337),
    TOKEN: address,
    PAY_TO: address,
    FACILITATOR_URL: z.url().optional(),
    FACILITATOR_PRIVATE_KEY: z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 32-byte hex private key')
      .optional(),
    VOUCH_URL: z.url(),
    VOUCH_API_KEY: z.string().min(1).optional(),
    VOUCH_RECORD_API_KEY: z.string().min(1).optional(),
    VOUCH_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    VOUCH_FAIL_MODE: z.enum(['closed', 'open']).default('closed'),
    VOUCH_ON_REVIEW: z.enum(['abort', 'allow']).default('abort'),
  })
  .refine((e) => e.FACILITATOR_URL || e.FACILITATOR_PRIVATE_KEY, {
    message: 'FACILITATOR_URL or FACILITATOR_PRIVATE_KEY (for the local facilitator) is required',
  });

const parsed = env.safeParse(process.env);
if (!parsed.success) {
  console.error(
    `x402-server: invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'env'}: ${i.message}`).join(', ')}`,
  );
  process.exit(1);
}
const config = parsed.data;

let facilitator: LocalFacilitator | undefined;
if (!config.FACILITATOR_URL && config.FACILITATOR_PRIVATE_KEY)
  facilitator = await startFacilitator({
    rpcUrl: config.RPC_URL,
    chainId: config.CHAIN_ID,
    privateKey: config.FACILITATOR_PRIVATE_KEY as `0x${string}`,
  });
const facilitatorUrl = config.FACILITATOR_URL ?? (facilitator?.url as string);

const app = await buildServer({
  facilitatorUrl,
  chainId: config.CHAIN_ID,
  token: config.TOKEN,
  payTo: config.PAY_TO,
  vouch: {
    url: config.VOUCH_URL,
    ...(config.VOUCH_API_KEY && { apiKey: config.VOUCH_API_KEY }),
    ...(config.VOUCH_RECORD_API_KEY && { recordApiKey: config.VOUCH_RECORD_API_KEY }),
    timeoutMs: config.VOUCH_TIMEOUT_MS,
    failMode: config.VOUCH_FAIL_MODE,
    onReview: config.VOUCH_ON_REVIEW,
  },
});
const url = await app.listen({ host: config.HOST, port: config.PORT });
app.log.info({ url, facilitator: facilitatorUrl }, 'x402-server listening');

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, async () => {
    await app.close();
    await facilitator?.close();
    process.exit(0);
  });
