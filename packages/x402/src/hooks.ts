import type { x402Facilitator } from '@x402/core/facilitator';
import type { x402ResourceServer } from '@x402/core/server';
import { VouchClient, type VouchClientOptions, VouchRequestError, VouchUnavailableError } from './client.ts';
import {
  type DecisionLike,
  decisionRequest,
  describePayment,
  type PaymentFacts,
  type PaymentPayloadLike,
  type RequirementsLike,
  type ReviewMode,
  releasesHold,
  settledAmountOf,
  verdictOf,
} from './mapping.ts';
import { signedByPayer } from './signature.ts';

/** pino-compatible: object first, message second. */
export interface Logger {
  info(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
  error(object: Record<string, unknown>, message: string): void;
}

export interface VouchHooksOptions extends VouchClientOptions {
  /** A `review` aborts the payment (default), or lets it through with its approval left pending (docs/x402.md). */
  onReview?: ReviewMode;
  /**
   * When Vouch does not answer (timeout, network, 5xx): `closed` aborts the payment (default);
   * `open` lets it through and logs an error for every payment that went unchecked.
   */
  failMode?: 'closed' | 'open';
  /** Record each settled payment as a transaction of the payer (default true; needs a `score` key). */
  record?: boolean;
  /** Stored as the decision's `category` (a policy can match it with `categoryIn`). */
  category?: string;
  logger?: Logger;
  /**
   * After a settlement, a capture or record Vouch could not take (unavailable) is sent again in
   * the background, first after this many ms, then twice as long each time up to 30 s, until the
   * payment's hold would have expired (default 1,000).
   */
  settledRetryMs?: number;
}

/** The part of the x402 hook contexts the hooks read: resource server and facilitator contexts both have it. */
export interface PaymentContext {
  readonly paymentPayload: PaymentPayloadLike;
  readonly requirements: RequirementsLike;
}
type SettleResultLike = {
  readonly success: boolean;
  readonly transaction: string;
  readonly amount?: string;
  readonly errorReason?: string;
};

export type Abort = { abort: true; reason: string; message: string };

/** What became of a call after a settlement: taken (or refused for good), or to be sent again. */
type Outcome = 'done' | 'unavailable';
/** A call after a settlement still to be made: the hold's capture or the transaction's record. */
type Owed = { call: 'capture' | 'record'; send: () => Promise<Outcome> };

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

const consoleLogger: Logger = {
  info: (object, message) => console.info(`[vouch-x402] ${message}`, object),
  warn: (object, message) => console.warn(`[vouch-x402] ${message}`, object),
  error: (object, message) => console.error(`[vouch-x402] ${message}`, object),
};

/**
 * The failure a settlement reported (a `SettleError` from the facilitator carries its reason), or
 * null when the settlement threw something else — a timeout or a lost connection, whose outcome
 * is not known.
 */
function reportedFailure(error: unknown): { errorReason?: string; transaction?: string } | null {
  if (error instanceof Error && error.name === 'SettleError') {
    const { errorReason, transaction } = error as Error & { errorReason?: unknown; transaction?: unknown };
    if (typeof errorReason !== 'string') return null;
    // The transaction it broadcast, if any: such a failure may have moved money (releasesHold).
    return { errorReason, ...(typeof transaction === 'string' && { transaction }) };
  }
  return null;
}

/**
 * The reason a verification that ended in the failure hooks gave for finding the payment invalid,
 * or null when it threw without one (a timeout, a lost connection: the outcome is not known). A
 * facilitator's invalid answer arrives there, not in the after-verify hooks: a resource server's
 * `HTTPFacilitatorClient` throws a non-2xx `{isValid: false}` as a `VerifyError`, and an
 * `x402Facilitator` passes a scheme's invalid result to its failure hooks as
 * `new Error('<invalidReason>: <invalidMessage>')` (`facilitator` reads that form).
 */
function invalidReasonOf(error: unknown, facilitator: boolean): string | null {
  if (error instanceof Error && error.name === 'VerifyError') {
    const { invalidReason } = error as Error & { invalidReason?: unknown };
    return typeof invalidReason === 'string' ? invalidReason : null;
  }
  if (facilitator && error instanceof Error && error.constructor === Error)
    return /^([a-z][a-z0-9_]*)(?:: |$)/.exec(error.message)?.[1] ?? null;
  return null;
}

/**
 * Hooks that put Vouch in front of x402 payments, for `x402ResourceServer` (@x402/core/server) or
 * `x402Facilitator` (@x402/core/facilitator):
 *
 * - `onBeforeVerify` / `onBeforeSettle`: `POST /api/decisions` for the payer (screening payTo) with
 *   `hold: true`; a deny, a review (by default), a hold no longer held or an unreachable Vouch (by
 *   default) aborts with the reason. A replayed decision's hold is read as it is now, with what
 *   the sanctions screen finds now: a refusal aborts and voids the hold.
 * - `onAfterVerify` (a payment the facilitator found invalid, but for a used nonce), `onSettleFailure`
 *   (one that surely moved no money) and `onVerifiedPaymentCanceled` (the resource's handler
 *   failed): the hold is voided. `onVerifyFailure` voids it as `onAfterVerify` does when the failure
 *   is the facilitator's invalid answer (`invalidReasonOf`; `facilitatorSide`: the hooks are an
 *   `x402Facilitator`'s), and keeps it until it expires when verification threw without one.
 * - `onAfterSettle`: the hold is captured for the settled amount (less than held for `upto`; the
 *   rest is released) as `settled` — the money has moved, so the screen cannot refuse recording
 *   it — and the transaction recorded.
 *   A capture or record Vouch does not answer is sent again in the background until the hold would
 *   have expired; `idle()` waits for that.
 *
 * Every call for one payment carries the same `Idempotency-Key`, so a retried payment decides and
 * holds once, and captures once. No hook throws: the x402 packages would only log it.
 */
export function createVouchHooks(options: VouchHooksOptions, facilitatorSide = false) {
  const client = new VouchClient(options);
  const log = options.logger ?? consoleLogger;
  const failOpen = options.failMode === 'open';
  const record = options.record ?? true;
  /** Work the hooks go on with after answering: captures and records sent again (`idle`). */
  const pending = new Set<Promise<void>>();
  const later = (work: Promise<void>) => {
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };

  const describe = (ctx: PaymentContext) => describePayment(ctx.paymentPayload, ctx.requirements);
  const request = (payment: PaymentFacts) =>
    decisionRequest(payment, options.category ? { category: options.category } : {});
  const facts = (payment: PaymentFacts) => ({
    payer: payment.payer,
    payTo: payment.payTo,
    amount: payment.amount,
    asset: payment.asset,
    scheme: payment.scheme,
    idempotencyKey: payment.idempotencyKey,
  });

  /** The decision (stored, or made now) and its hold as it is now. */
  async function decisionOf(payment: PaymentFacts): Promise<DecisionLike> {
    const { data, replayed } = await client.decide(request(payment), payment.idempotencyKey);
    // A replayed answer shows the hold as it was then: ask for it as it is now.
    if (replayed && data.authorization) {
      const hold = await client.authorization(payment.payer, data.authorization.authorizationId);
      return { ...data, authorization: hold };
    }
    return data;
  }

  /** Before verification and before settlement: may this payment go on? */
  async function gate(ctx: PaymentContext, phase: 'verify' | 'settle'): Promise<Abort | undefined> {
    const described = describe(ctx);
    if (!described.ok) {
      log.warn({ phase, reason: described.reason }, `payment refused: ${described.message}`);
      return { abort: true, reason: described.reason, message: described.message };
    }
    const payment = described.payment;
    // The payer is only a claim until its signature is checked: Vouch is asked about signed payments only.
    const signed = await signedByPayer(ctx.paymentPayload, ctx.requirements);
    if (signed === false) {
      const message = `the payload is not signed by the payer it names (${payment.payer})`;
      log.warn({ phase, ...facts(payment) }, `payment refused: ${message}`);
      return { abort: true, reason: 'vouch_unsigned_payment', message };
    }
    // A signature only the chain can check (a smart wallet's, ERC-1271 or ERC-6492) is checked by
    // the facilitator's verification: Vouch decides, and holds, before the settlement, once it is
    // verified — never for a payer that is still only a claim.
    if (signed === null && phase === 'verify') return undefined;
    try {
      const decision = await decisionOf(payment);
      const verdict = verdictOf(decision, options.onReview);
      if (!verdict.proceed) {
        log.warn(
          { phase, ...facts(payment), decisionId: decision.decisionId, reason: verdict.reason },
          verdict.message,
        );
        // An abort before settlement calls no failure hook: the hold the screen now refuses is voided here.
        if (verdict.voids) await voidHold(payment, verdict.voids, verdict.reason);
        return { abort: true, reason: verdict.reason, message: verdict.message };
      }
      if (decision.decision === 'review')
        log.warn(
          { phase, ...facts(payment), decisionId: decision.decisionId, approvalId: decision.approvalId },
          'Vouch asked for review; the payment goes on (onReview: allow) and nothing is captured for it',
        );
      return undefined;
    } catch (error) {
      // The key's decision was made for this nonce under another signature or other terms: a copy
      // of the payment with its signature changed (which must not take or release its hold), or
      // one whose terms differ from what was signed. Refused, as a client error.
      if (error instanceof VouchRequestError && error.code === 'IDEMPOTENCY_KEY_REUSED') {
        const message =
          'this authorization’s nonce was decided about with another signature or other terms: ' +
          'a payment signed again is a new payment, with a nonce of its own';
        log.warn({ phase, ...facts(payment) }, `payment refused: ${message}`);
        return { abort: true, reason: 'vouch_payment_resigned', message };
      }
      if (error instanceof VouchUnavailableError && failOpen) {
        log.error(
          { phase, ...facts(payment), err: error.message },
          'FAIL-OPEN: Vouch is unavailable; the payment goes on UNCHECKED (no decision, no hold)',
        );
        return undefined;
      }
      const reason =
        error instanceof VouchUnavailableError
          ? 'vouch_unavailable'
          : `vouch_error:${error instanceof VouchRequestError ? error.code : 'UNEXPECTED'}`;
      const message = error instanceof Error ? error.message : String(error);
      log.error({ phase, ...facts(payment), reason, err: message }, 'payment refused: Vouch could not decide');
      return { abort: true, reason, message };
    }
  }

  /** Voids the payment's hold; a failure is logged (the hold is then released when it expires). */
  async function voidHold(payment: PaymentFacts, authorizationId: string, why: string): Promise<void> {
    try {
      await client.void(payment.payer, authorizationId, payment.idempotencyKey);
      log.info({ ...facts(payment), authorizationId, why }, 'hold voided');
    } catch (error) {
      log.error(
        { ...facts(payment), why, err: error instanceof Error ? error.message : String(error) },
        'could not void the hold; it is released when it expires',
      );
    }
  }

  /** Releases the payment's hold, if it has one that is still held. */
  async function release(ctx: PaymentContext, why: string, phase: 'verify' | 'settle'): Promise<void> {
    const described = describe(ctx);
    if (!described.ok) return;
    const payment = described.payment;
    // A payer whose signature only the chain can check is decided about before settlement only:
    // before it (a verification that failed, a resource not served) nothing was held for it, and
    // asking would make the decision and the hold — for a payer that may be a forgery.
    if (phase === 'verify' && (await signedByPayer(ctx.paymentPayload, ctx.requirements)) !== true) return;
    try {
      const decision = await decisionOf(payment);
      const hold = decision.authorization;
      if (hold?.status !== 'held') return;
      await voidHold(payment, hold.authorizationId, why);
    } catch (error) {
      // Not read, so not voided: the hold stays reserved until it expires (it cannot be captured after that).
      log.error(
        { ...facts(payment), why, err: error instanceof Error ? error.message : String(error) },
        'could not read the hold to void it; it is released when it expires',
      );
    }
  }

  /** After a settlement that moved money: capture the hold, record the transaction. */
  async function settled(ctx: PaymentContext & { result: SettleResultLike }): Promise<void> {
    const described = describe(ctx);
    if (!described.ok) return;
    const payment = described.payment;
    const amount = settledAmountOf(ctx.result, ctx.requirements);
    const base = { ...facts(payment), settled: amount?.toString(), transaction: ctx.result.transaction };
    if (amount === null) {
      log.error(base, 'settled amount unreadable: nothing captured or recorded');
      return;
    }
    // The hold was made at or before this moment for `holdSeconds`: past that it cannot be captured.
    const deadline = Date.now() + payment.holdSeconds * 1000;
    const owed: Owed[] = [];
    const capturing = () => capture(payment, amount, base);
    if ((await capturing()) === 'unavailable') owed.push({ call: 'capture', send: capturing });
    const recording = () => recordTransaction(payment, amount, ctx.result.transaction, base);
    if (record && amount > 0n && (await recording()) === 'unavailable') owed.push({ call: 'record', send: recording });
    // The money has moved: what Vouch could not take now is sent again until it is taken or the
    // hold is gone (the same Idempotency-Key, so each is taken once), without holding up the answer.
    if (owed.length) later(retryUntil(owed, deadline, base));
  }

  /** The capture of a settled payment's hold; `unavailable` when Vouch did not answer (it is sent again). */
  async function capture(payment: PaymentFacts, amount: bigint, base: Record<string, unknown>): Promise<Outcome> {
    try {
      const decision = await decisionOf(payment);
      const hold = decision.authorization;
      if (!hold) {
        log.error(
          { ...base, decisionId: decision.decisionId, decision: decision.decision },
          'settled without a Vouch hold: the payment is not in the budget',
        );
      } else if (hold.status !== 'held') {
        if (hold.status !== 'captured')
          log.error(
            { ...base, authorizationId: hold.authorizationId, status: hold.status },
            'settled, but the hold is no longer held',
          );
      } else if (amount === 0n) {
        await client.void(payment.payer, hold.authorizationId, payment.idempotencyKey);
        log.info({ ...base, authorizationId: hold.authorizationId }, 'settled nothing: hold voided');
      } else {
        // The money has moved: the capture records it (`settled`) even if the screen now refuses it.
        const { data } = await client.capture(
          payment.payer,
          hold.authorizationId,
          amount,
          payment.idempotencyKey,
          true,
        );
        if (data.screening)
          log.error(
            { ...base, authorizationId: hold.authorizationId, spendId: data.spendId, screening: data.screening },
            'settled and captured, but the sanctions screen now refuses this payment',
          );
        else log.info({ ...base, authorizationId: hold.authorizationId, spendId: data.spendId }, 'hold captured');
      }
      return 'done';
    } catch (error) {
      return failed(error, base, {
        unavailable: 'settled, but Vouch did not answer the capture: it is sent again until the hold expires',
        refused: 'settled, but the hold could not be captured: the budget does not show this payment',
      });
    }
  }

  /** A call after a settlement that failed, logged: to be sent again when Vouch did not answer, else done. */
  function failed(
    error: unknown,
    base: Record<string, unknown>,
    messages: { unavailable: string; refused: string },
  ): Outcome {
    const unavailable = error instanceof VouchUnavailableError;
    log.error(
      { ...base, err: error instanceof Error ? error.message : String(error) },
      unavailable ? messages.unavailable : messages.refused,
    );
    return unavailable ? 'unavailable' : 'done';
  }

  /** Sends `owed` again, each until it is taken (or refused), while `deadline` has not passed. */
  async function retryUntil(owed: Owed[], deadline: number, base: Record<string, unknown>) {
    let wait = options.settledRetryMs ?? 1_000;
    while (owed.length) {
      if (Date.now() + wait >= deadline) {
        log.error(
          { ...base, unsent: owed.map((o) => o.call) },
          'settled, and Vouch did not answer before the hold would have expired: a call of the payment was never made',
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, wait).unref());
      wait = Math.min(wait * 2, 30_000);
      for (const o of [...owed]) if ((await o.send()) === 'done') owed.splice(owed.indexOf(o), 1);
    }
  }

  async function recordTransaction(
    payment: PaymentFacts,
    amount: bigint,
    txHash: string,
    base: Record<string, unknown>,
  ): Promise<Outcome> {
    if (!TX_HASH.test(txHash)) {
      log.warn(base, 'not recorded: the settlement named no transaction hash');
      return 'done';
    }
    try {
      const { data } = await client.record(
        {
          agent: payment.payer,
          txHash: txHash.toLowerCase(),
          amount: amount.toString(),
          asset: payment.asset,
          type: 0,
          counterparty: payment.payTo,
        },
        payment.idempotencyKey,
      );
      log.info({ ...base, chainStatus: data.chainStatus }, 'transaction recorded');
      return 'done';
    } catch (error) {
      if (error instanceof VouchRequestError && error.status === 403) {
        const missingScope = typeof error.details === 'object' && error.details !== null && 'required' in error.details;
        log.info(
          base,
          missingScope
            ? 'not recorded: the key has no `score` scope (recordApiKey)'
            : 'not recorded: the payer is registered by another Vouch organization, and recording is its owner’s write',
        );
        return 'done';
      }
      return failed(error, base, {
        unavailable: 'transaction not recorded yet: Vouch did not answer; it is sent again',
        refused: 'transaction not recorded',
      });
    }
  }

  return {
    client,
    /** Resolves once no capture or record is waiting to be sent again: await it before the process exits. */
    idle: async (): Promise<void> => {
      while (pending.size) await Promise.all(pending);
    },
    onBeforeVerify: (ctx: PaymentContext) => gate(ctx, 'verify'),
    onAfterVerify: async (
      ctx: PaymentContext & { result: { readonly isValid: boolean; readonly invalidReason?: string } },
    ) => {
      // The hold is the payment's, whichever attempt settles it: one found invalid because its
      // nonce is used (another attempt of the payment settled, or is settling) keeps it.
      const reason = ctx.result.invalidReason;
      if (!ctx.result.isValid && releasesHold(reason === undefined ? {} : { errorReason: reason }))
        await release(ctx, `verification failed: ${reason ?? 'invalid'}`, 'verify');
      return undefined;
    },
    onVerifyFailure: async (ctx: PaymentContext & { readonly error?: unknown }) => {
      // The facilitator found the payment invalid, and said why: as after an invalid result, a
      // reason that moved nothing for sure voids the hold (a used nonce keeps it).
      const reason = invalidReasonOf(ctx.error, facilitatorSide);
      if (reason !== null && releasesHold({ errorReason: reason })) {
        await release(ctx, `verification failed: ${reason}`, 'verify');
        return undefined;
      }
      // Verification threw: what the facilitator made of the payment is not known, and another
      // attempt of it may be settling. The hold stays until it expires (failing closed).
      const described = describe(ctx);
      if (described.ok)
        log.warn(facts(described.payment), 'verification failed without an answer: the hold is kept until it expires');
      return undefined;
    },
    onBeforeSettle: (ctx: PaymentContext) => gate(ctx, 'settle'),
    onAfterSettle: async (ctx: PaymentContext & { result: SettleResultLike }) => {
      // A facilitator hands failed settlements to its after-settle hooks too.
      if (ctx.result.success) await settled(ctx);
      else if (releasesHold(ctx.result)) await release(ctx, `settlement failed: ${ctx.result.errorReason}`, 'settle');
    },
    onSettleFailure: async (ctx: PaymentContext & { error: unknown }) => {
      const failure = reportedFailure(ctx.error);
      if (releasesHold(failure)) await release(ctx, `settlement failed: ${failure?.errorReason}`, 'settle');
      else
        log.warn(
          { err: ctx.error instanceof Error ? ctx.error.message : String(ctx.error) },
          'settlement outcome unknown: the hold is kept until it expires',
        );
      return undefined;
    },
    onVerifiedPaymentCanceled: async (ctx: PaymentContext & { reason: string }) => {
      // Before settlement (the resource's handler failed): as after verification.
      await release(ctx, `the resource was not served (${ctx.reason})`, 'verify');
    },
  };
}

export type VouchHooks = ReturnType<typeof createVouchHooks>;

/** Registers the hooks on an `x402ResourceServer` (@x402/core/server); returns them (their `client` included). */
export function registerVouchHooks(server: x402ResourceServer, options: VouchHooksOptions): VouchHooks {
  const hooks = createVouchHooks(options);
  server
    .onBeforeVerify(hooks.onBeforeVerify)
    .onAfterVerify(hooks.onAfterVerify)
    .onVerifyFailure(hooks.onVerifyFailure)
    .onBeforeSettle(hooks.onBeforeSettle)
    .onAfterSettle(hooks.onAfterSettle)
    .onSettleFailure(hooks.onSettleFailure)
    .onVerifiedPaymentCanceled(hooks.onVerifiedPaymentCanceled);
  return hooks;
}

/**
 * Registers the hooks on an `x402Facilitator` (@x402/core/facilitator). A facilitator does not
 * see the resource's handler: a payment verified but never settled keeps its hold until it expires.
 */
export function registerVouchFacilitatorHooks(facilitator: x402Facilitator, options: VouchHooksOptions): VouchHooks {
  // Its invalid verifications reach onVerifyFailure as plain errors naming the reason (invalidReasonOf).
  const hooks = createVouchHooks(options, true);
  facilitator
    .onBeforeVerify(hooks.onBeforeVerify)
    .onAfterVerify(async (ctx) => {
      await hooks.onAfterVerify(ctx);
    })
    .onVerifyFailure(hooks.onVerifyFailure)
    .onBeforeSettle(hooks.onBeforeSettle)
    .onAfterSettle(hooks.onAfterSettle)
    .onSettleFailure(hooks.onSettleFailure);
  return hooks;
}
