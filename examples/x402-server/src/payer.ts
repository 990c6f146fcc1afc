import { type BudgetCheckOptions, registerBudgetCheck } from '@vouch/x402';
import { type x402Client as X402Client, x402Client, x402HTTPClient } from '@x402/core/client';
import type { Network, PaymentPayload } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment } from '@x402/fetch';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/**
 * The paying side: an agent with a key and the x402 client packages (@x402/core/client,
 * @x402/evm, @x402/fetch). It pays in the example's token only, and may check its own budget with
 * Vouch before it signs (`budgetCheck`, @vouch/x402's `onBeforePaymentCreation` hook).
 */
export interface PayerOptions {
  privateKey: Hex;
  chainId: number;
  token: string;
  /** A payment identifier for every payment (the payment-identifier extension); a new one each time by default. */
  paymentId?: () => string;
  budgetCheck?: Omit<BudgetCheckOptions, 'agent'>;
}

export function createPayer(options: PayerOptions) {
  const account = privateKeyToAccount(options.privateKey);
  const network = `eip155:${options.chainId}` as Network;
  const signer = { address: account.address, signTypedData: (message: never) => account.signTypedData(message) };
  const client: X402Client = new x402Client()
    .register(network, new ExactEvmScheme(signer))
    .register(network, new UptoEvmScheme(signer))
    // The example's token is not one of the x402 packages' default assets: allow it, by address.
    .setSpendControls({ allowedAssets: [{ network, asset: options.token }] })
    .registerExtension({
      key: PAYMENT_IDENTIFIER,
      // Fills the identifier the server declared it accepts (the server's to deduplicate by; Vouch keys
      // a payment by its signed nonce, not by this).
      enrichPaymentPayload: async (payload: PaymentPayload) => {
        const declared = payload.extensions?.[PAYMENT_IDENTIFIER] as { info?: Record<string, unknown> } | undefined;
        if (!declared) return payload;
        const id = options.paymentId?.() ?? `pay_${crypto.randomUUID().replaceAll('-', '')}`;
        return {
          ...payload,
          extensions: { ...payload.extensions, [PAYMENT_IDENTIFIER]: { ...declared, info: { ...declared.info, id } } },
        };
      },
    });
  if (options.budgetCheck) registerBudgetCheck(client, { ...options.budgetCheck, agent: account.address });
  return {
    address: account.address.toLowerCase(),
    client,
    http: new x402HTTPClient(client),
    /** `fetch` that pays a 402 and tries again once, as @x402/fetch does. */
    fetch: wrapFetchWithPayment(globalThis.fetch, client),
  };
}
export type Payer = ReturnType<typeof createPayer>;
