import type { x402Client } from '@x402/core/client';
import { VouchClient, type VouchClientOptions, VouchUnavailableError } from './client.ts';
import { caip19 } from './mapping.ts';

export interface BudgetCheckOptions extends VouchClientOptions {
  /** The paying agent: the address whose budget is checked (the x402 client's signer). */
  agent: string;
  /** Also screen `payTo` against the sanctions list (default true). */
  screenPayTo?: boolean;
  /** When Vouch does not answer: `closed` refuses to pay (default), `open` pays and logs an error. */
  failMode?: 'closed' | 'open';
  logger?: { error(object: Record<string, unknown>, message: string): void };
}

/** What `onBeforePaymentCreation` receives (a structural subset of `PaymentCreationContext`). */
interface CreationContext {
  readonly selectedRequirements: {
    readonly network: string;
    readonly asset: string;
    readonly amount: string;
    readonly payTo: string;
  };
}

/**
 * An `onBeforePaymentCreation` hook (x402Client, @x402/core/client) for an agent that checks its
 * own budget before it signs anything: `POST /api/budgets/:agent/check` for the amount in the
 * asset (a read: nothing is held or stored) and, by default, `POST /api/verify/sanctions` of
 * payTo. A refusal aborts the payment before a signature exists. The hold, the capture and the
 * record remain the resource server's (or facilitator's) hooks: this is the agent's own look.
 */
export function createBudgetCheckHook(options: BudgetCheckOptions) {
  const client = new VouchClient(options);
  const agent = options.agent.toLowerCase();
  const screen = options.screenPayTo ?? true;
  const failOpen = options.failMode === 'open';
  const log = options.logger ?? { error: (object, message) => console.error(`[vouch-x402] ${message}`, object) };

  return async (ctx: CreationContext): Promise<undefined | { abort: true; reason: string }> => {
    const { network, asset: token, amount, payTo } = ctx.selectedRequirements;
    const asset = caip19(network, token);
    if (!asset)
      return { abort: true, reason: `vouch_unsupported_payment: not an ERC-20 on an EVM network (${network})` };
    try {
      const check = await client.checkBudget(agent, { amount, asset });
      if (!check.allowed)
        return {
          abort: true,
          reason: `vouch_budget:${check.reason ?? 'REFUSED'} (${amount} of ${asset}; ${check.dailyRemaining} left today)`,
        };
      if (screen) {
        const screening = await client.screen(payTo);
        if (screening.state !== 'clear') return { abort: true, reason: `vouch_payto_${screening.state}: ${payTo}` };
      }
      return undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof VouchUnavailableError && failOpen) {
        log.error({ agent, amount, asset, payTo, err: message }, 'FAIL-OPEN: Vouch is unavailable; paying UNCHECKED');
        return undefined;
      }
      const kind = error instanceof VouchUnavailableError ? 'vouch_unavailable' : 'vouch_error';
      return { abort: true, reason: `${kind}: ${message}` };
    }
  };
}

/** Registers the budget check on an x402 client. */
export function registerBudgetCheck(client: x402Client, options: BudgetCheckOptions): x402Client {
  return client.onBeforePaymentCreation(createBudgetCheckHook(options));
}
