import { createServer, type IncomingMessage, type Server } from 'node:http';
import { x402Facilitator } from '@x402/core/facilitator';
import { VerifyError } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { VouchClient, VouchRequestError, VouchUnavailableError } from './client.ts';
import { createVouchHooks, type Logger, registerVouchFacilitatorHooks } from './hooks.ts';

// The hooks' own behaviour — failing open or closed, timeouts, which refusals abort — against a
// scripted HTTP server on loopback (the end-to-end test runs them against Vouch itself).

type Reply = { status: number; body?: unknown; headers?: Record<string, string>; hang?: boolean };
let script: (req: IncomingMessage, body: string) => Reply;
const seen: Array<{ method: string; url: string; key: string | undefined; body: string }> = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', key: req.headers['idempotency-key'] as string, body });
      const reply = script(req, body);
      if (reply.hang) return; // never answers
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen.length = 0;
});

const account = privateKeyToAccount(generatePrivateKey());
const PAYER = account.address.toLowerCase();
const PAY_TO = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed';
const requirements = {
  scheme: 'exact',
  network: 'eip155:8453',
  asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  amount: '10000',
  payTo: PAY_TO,
  maxTimeoutSeconds: 60,
  extra: { name: 'USD Coin', version: '2' },
};
/** As the x402 `exact` client signs it: valid for the requirements' maxTimeoutSeconds from now. */
const validBefore = Math.floor(Date.now() / 1000) + requirements.maxTimeoutSeconds;
const authorization = {
  from: PAYER,
  to: PAY_TO,
  value: '10000',
  validAfter: '0',
  validBefore: String(validBefore),
  nonce: `0x${'01'.repeat(32)}` as const,
};
/** An EIP-3009 authorization as the x402 `exact` client signs it. */
const signAs = (signer: typeof account) =>
  signer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: getAddress(requirements.asset) },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: {
      ...authorization,
      from: getAddress(authorization.from),
      to: getAddress(authorization.to),
      value: 10000n,
      validAfter: 0n,
      validBefore: BigInt(validBefore),
    },
  });
const paymentSignedBy = async (signer: typeof account) => ({
  paymentPayload: {
    x402Version: 2,
    accepted: requirements,
    payload: { authorization, signature: await signAs(signer) },
  },
  requirements,
});
const ctx = await paymentSignedBy(account);
const hold = {
  authorizationId: '9',
  agent: PAYER,
  asset: 'a',
  amount: '10000',
  captured: '0',
  status: 'held',
  expiresAt: 1,
};
const allow = { decisionId: '5', decision: 'allow', reasons: [], authorization: hold, approvalId: null };
const ok = (data: unknown, headers?: Record<string, string>): Reply => ({
  status: 200,
  body: { success: true, data },
  ...(headers && { headers }),
});
const fail = (status: number, code: string, details?: unknown): Reply => ({
  status,
  body: { success: false, error: { code, message: code.toLowerCase(), details, requestId: 'r' } },
});

function recordingLogger() {
  const lines: Array<{ level: string; message: string }> = [];
  const logger: Logger = {
    info: (_o, message) => lines.push({ level: 'info', message }),
    warn: (_o, message) => lines.push({ level: 'warn', message }),
    error: (_o, message) => lines.push({ level: 'error', message }),
  };
  return { lines, logger };
}

describe('VouchClient', () => {
  it('tells an outage (no answer in time, 5xx, 429) from a refusal, and a decision in progress from both', async () => {
    const client = new VouchClient({ url, timeoutMs: 200 });
    const body = { agent: PAYER } as never;
    script = () => ({ status: 0, hang: true });
    const started = performance.now();
    await expect(client.decide(body, 'k')).rejects.toBeInstanceOf(VouchUnavailableError);
    expect(performance.now() - started).toBeLessThan(2_000);
    for (const reply of [fail(503, 'SERVICE_UNAVAILABLE'), fail(429, 'RATE_LIMITED')]) {
      script = () => reply;
      await expect(client.decide(body, 'k')).rejects.toBeInstanceOf(VouchUnavailableError);
    }
    script = () => fail(409, 'IDEMPOTENCY_IN_PROGRESS');
    await expect(client.decide(body, 'k')).rejects.toMatchObject({ status: 409, code: 'IDEMPOTENCY_IN_PROGRESS' });
    script = () => ({ status: 502, body: '<html>bad gateway</html>' });
    await expect(client.decide(body, 'k')).rejects.toBeInstanceOf(VouchUnavailableError);
    script = () => fail(401, 'UNAUTHORIZED');
    await expect(client.decide(body, 'k')).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    script = () => ok({ unexpected: true });
    await expect(client.decide(body, 'k')).rejects.toBeInstanceOf(VouchRequestError);
  });

  it('cannot reach a closed port: unavailable', async () => {
    const client = new VouchClient({ url: 'http://127.0.0.1:1', timeoutMs: 500 });
    await expect(client.screen(PAYER)).rejects.toBeInstanceOf(VouchUnavailableError);
  });
});

describe('the hooks', () => {
  it('fail closed by default when Vouch does not answer, and open when told to, logging it as an error', async () => {
    script = () => ({ status: 0, hang: true });
    const closed = createVouchHooks({ url, timeoutMs: 100, logger: recordingLogger().logger });
    expect(await closed.onBeforeVerify(ctx)).toMatchObject({ abort: true, reason: 'vouch_unavailable' });

    const { lines, logger } = recordingLogger();
    const open = createVouchHooks({ url, timeoutMs: 100, failMode: 'open', logger });
    expect(await open.onBeforeVerify(ctx)).toBeUndefined();
    expect(lines).toEqual([{ level: 'error', message: expect.stringMatching(/^FAIL-OPEN: Vouch is unavailable/) }]);
  });

  it('aborts on a refusal that is not an outage, even when failing open', async () => {
    script = () => fail(403, 'FORBIDDEN', { required: 'spend', scopes: ['read'] });
    const hooks = createVouchHooks({ url, failMode: 'open', logger: recordingLogger().logger });
    expect(await hooks.onBeforeSettle(ctx)).toMatchObject({ abort: true, reason: 'vouch_error:FORBIDDEN' });
  });

  it('sends again a call whose payment another call is still deciding, and refuses it, never failing open, if that goes on', async () => {
    script = () => fail(409, 'IDEMPOTENCY_IN_PROGRESS');
    const hooks = createVouchHooks({ url, failMode: 'open', logger: recordingLogger().logger });
    expect(await hooks.onBeforeVerify(ctx)).toMatchObject({
      abort: true,
      reason: 'vouch_error:IDEMPOTENCY_IN_PROGRESS',
    });
    expect(seen.filter((s) => s.url === '/api/decisions')).toHaveLength(4);
    // The other call finishes meanwhile: the stored decision is answered.
    seen.length = 0;
    let calls = 0;
    script = (req) =>
      req.url === '/api/decisions' && ++calls === 1 ? fail(409, 'IDEMPOTENCY_IN_PROGRESS') : ok(allow);
    expect(await hooks.onBeforeVerify(ctx)).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('refuses a nonce Vouch decided about under another signature', async () => {
    script = () => fail(422, 'IDEMPOTENCY_KEY_REUSED');
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, failMode: 'open', logger });
    expect(await hooks.onBeforeVerify(ctx)).toMatchObject({ abort: true, reason: 'vouch_payment_resigned' });
    expect(lines).toEqual([{ level: 'warn', message: expect.stringMatching(/signed again is a new payment/) }]);
  });

  it('asks Vouch about signed payments only: a payload naming a payer that did not sign it is refused', async () => {
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    const forged = await paymentSignedBy(privateKeyToAccount(generatePrivateKey()));
    expect(await hooks.onBeforeVerify(forged)).toMatchObject({ abort: true, reason: 'vouch_unsigned_payment' });
    const unsigned = { ...ctx, paymentPayload: { ...ctx.paymentPayload, payload: { authorization } } };
    expect(await hooks.onBeforeSettle(unsigned)).toMatchObject({ abort: true, reason: 'vouch_unsigned_payment' });
    expect(seen).toEqual([]);
  });

  it('decides about a payer whose signature only the chain can check once the facilitator verified it', async () => {
    // 66 bytes: no EOA signature, so a smart wallet's (ERC-1271) as far as Vouch can tell.
    const smart = {
      ...ctx,
      paymentPayload: { ...ctx.paymentPayload, payload: { authorization, signature: `0x${'ab'.repeat(66)}` } },
    };
    script = () => ok(allow);
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    // Before verification: nothing asked, nothing held — the payer is still only a claim.
    expect(await hooks.onBeforeVerify(smart)).toBeUndefined();
    expect(seen).toEqual([]);
    // A verification that failed, or a resource not served, before settlement: nothing was held,
    // and nothing is asked (asking would make the decision and the hold).
    await hooks.onVerifyFailure(smart);
    await hooks.onAfterVerify({ ...smart, result: { isValid: false } });
    await hooks.onVerifiedPaymentCanceled({ ...smart, reason: 'handler failed' });
    expect(seen).toEqual([]);
    // Before settlement (after the facilitator's verification): decided and held.
    expect(await hooks.onBeforeSettle(smart)).toBeUndefined();
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /api/decisions']);
  });

  it('refuses a payment it cannot judge without asking Vouch', async () => {
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    const solana = { ...ctx, requirements: { ...requirements, network: 'solana:mainnet' } };
    expect(await hooks.onBeforeVerify(solana)).toMatchObject({ abort: true, reason: 'vouch_unsupported_payment' });
    expect(seen).toEqual([]);
  });

  it('asks for the hold as it is now when the decision is a replay', async () => {
    script = (req) =>
      req.url === '/api/decisions' ? ok(allow, { 'idempotency-replayed': 'true' }) : ok({ ...hold, status: 'expired' });
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    expect(await hooks.onBeforeSettle(ctx)).toMatchObject({ abort: true, reason: 'vouch_hold_expired' });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /api/decisions',
      `GET /api/budgets/${PAYER}/authorizations/9`,
    ]);
  });

  it('after settlement: captures the settled amount and records, every call under the payment’s key', async () => {
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow);
      if (req.url?.endsWith('/capture'))
        return ok({ authorization: { ...hold, status: 'captured' }, spendId: '4', screening: null });
      return fail(403, 'FORBIDDEN'); // the record: the payer belongs to another organization
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger });
    await hooks.onAfterSettle({
      ...ctx,
      result: { success: true, transaction: `0x${'ab'.repeat(32)}`, amount: '7000' },
    });
    expect(seen.map((s) => [s.url, s.key])).toEqual([
      ['/api/decisions', `x402:eip155:8453:${PAYER}:nonce:0x${'01'.repeat(32)}`],
      [`/api/budgets/${PAYER}/authorizations/9/capture`, `x402:eip155:8453:${PAYER}:nonce:0x${'01'.repeat(32)}`],
      ['/api/transactions/record', `x402:eip155:8453:${PAYER}:nonce:0x${'01'.repeat(32)}`],
    ]);
    // The money has moved: the capture records it whatever the screen now finds.
    expect(JSON.parse(seen[1]?.body ?? '')).toEqual({ amount: '7000', settled: true });
    expect(lines.map((l) => l.message)).toContain(
      'not recorded: the payer is registered by another Vouch organization, and recording is its owner’s write',
    );
  });

  it('after settlement: sends a capture and a record Vouch did not answer again, each until it is taken', async () => {
    let captures = 0;
    let records = 0;
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow);
      // The capture and the record meet an outage: two 503s, one 503.
      if (req.url?.endsWith('/capture'))
        return ++captures <= 2
          ? fail(503, 'SERVICE_UNAVAILABLE')
          : ok({ authorization: { ...hold, status: 'captured' }, spendId: '4', screening: null });
      return ++records <= 1
        ? fail(503, 'SERVICE_UNAVAILABLE')
        : ok({ agent: PAYER, txHash: `0x${'ab'.repeat(32)}`, chainStatus: 'unverified' });
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger, settledRetryMs: 5 });
    await hooks.onAfterSettle({
      ...ctx,
      result: { success: true, transaction: `0x${'ab'.repeat(32)}`, amount: '7000' },
    });
    // The hook answers after the first attempts; the rest goes on behind it.
    expect([captures, records]).toEqual([1, 1]);
    await hooks.idle();
    expect([captures, records]).toEqual([3, 2]);
    const key = `x402:eip155:8453:${PAYER}:nonce:0x${'01'.repeat(32)}`;
    expect(new Set(seen.map((s) => s.key))).toEqual(new Set([key]));
    expect(seen.filter((s) => s.url.endsWith('/capture')).map((s) => JSON.parse(s.body))).toEqual(
      Array(3).fill({ amount: '7000', settled: true }),
    );
    expect(
      lines
        .filter((l) => l.level === 'info')
        .map((l) => l.message)
        .sort(),
    ).toEqual(['hold captured', 'transaction recorded']);
  });

  it('after settlement: gives a capture up, logging it, once the hold would have expired', async () => {
    let captures = 0;
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow);
      if (req.url?.endsWith('/capture')) captures++;
      return fail(503, 'SERVICE_UNAVAILABLE');
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger, settledRetryMs: 5, record: false });
    // Only the clock the deadline is read from moves: the hold (maxTimeoutSeconds 60 + 60 s) is past.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      await hooks.onAfterSettle({ ...ctx, result: { success: true, transaction: `0x${'ab'.repeat(32)}` } });
      vi.setSystemTime(Date.now() + 121_000);
      await hooks.idle();
    } finally {
      vi.useRealTimers();
    }
    expect(captures).toBe(2);
    expect(lines.at(-1)).toEqual({
      level: 'error',
      message:
        'settled, and Vouch did not answer before the hold would have expired: a call of the payment was never made',
    });
  });

  it('after settlement: stops sending a capture again once Vouch refuses it', async () => {
    let captures = 0;
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow);
      if (req.url?.endsWith('/capture'))
        return ++captures === 1 ? fail(503, 'SERVICE_UNAVAILABLE') : fail(409, 'AUTHORIZATION_NOT_HELD');
      return fail(403, 'FORBIDDEN');
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger, settledRetryMs: 5 });
    await hooks.onAfterSettle({ ...ctx, result: { success: true, transaction: `0x${'ab'.repeat(32)}` } });
    await hooks.idle();
    expect(captures).toBe(2);
    expect(lines.at(-1)).toEqual({
      level: 'error',
      message: 'settled, but the hold could not be captured: the budget does not show this payment',
    });
  });

  it('stops a payment before settlement when the screen now refuses its hold, and voids the hold', async () => {
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow, { 'idempotency-replayed': 'true' });
      if (req.url?.endsWith('/void')) return ok({ ...hold, status: 'voided' });
      return ok({ ...hold, screening: 'SANCTIONS_LIST_UNAVAILABLE' });
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger });
    expect(await hooks.onBeforeSettle(ctx)).toMatchObject({
      abort: true,
      reason: 'vouch_deny:SANCTIONS_LIST_UNAVAILABLE',
    });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /api/decisions',
      `GET /api/budgets/${PAYER}/authorizations/9`,
      `POST /api/budgets/${PAYER}/authorizations/9/void`,
    ]);
    expect(lines.map((l) => l.message)).toContain('hold voided');
  });

  it('logs a settled payment the screen now refuses as an error, captured all the same', async () => {
    script = (req) => {
      if (req.url === '/api/decisions') return ok(allow);
      if (req.url?.endsWith('/capture'))
        return ok({ authorization: { ...hold, status: 'captured' }, spendId: '4', screening: 'SANCTIONED' });
      return ok({ agent: PAYER, txHash: `0x${'ab'.repeat(32)}`, chainStatus: 'unverified' });
    };
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger });
    await hooks.onAfterSettle({ ...ctx, result: { success: true, transaction: `0x${'ab'.repeat(32)}` } });
    expect(lines).toContainEqual({
      level: 'error',
      message: 'settled and captured, but the sanctions screen now refuses this payment',
    });
  });

  it('keeps the hold when a settlement’s outcome is unknown, voids it when nothing moved', async () => {
    script = (req) => (req.url === '/api/decisions' ? ok(allow) : ok({ ...hold, status: 'voided' }));
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    await hooks.onSettleFailure({ ...ctx, error: new Error('facilitator timed out') });
    expect(seen).toEqual([]);
    // A failure that names the transaction it broadcast may have moved money: kept too.
    const broadcast = Object.assign(new Error('failed'), {
      name: 'SettleError',
      errorReason: 'invalid_exact_evm_transaction_failed',
      transaction: `0x${'cd'.repeat(32)}`,
    });
    await hooks.onSettleFailure({ ...ctx, error: broadcast });
    expect(seen).toEqual([]);
    const refused = Object.assign(new Error('invalid'), {
      name: 'SettleError',
      errorReason: 'invalid_exact_evm_insufficient_balance',
    });
    await hooks.onSettleFailure({ ...ctx, error: refused });
    expect(seen.map((s) => s.url)).toEqual(['/api/decisions', `/api/budgets/${PAYER}/authorizations/9/void`]);
  });

  it('keeps the hold of a payment whose verification threw, or found its nonce used; voids it when invalid', async () => {
    script = (req) => (req.url === '/api/decisions' ? ok(allow) : ok({ ...hold, status: 'voided' }));
    const { lines, logger } = recordingLogger();
    const hooks = createVouchHooks({ url, logger });
    // No answer: the facilitator may have gone on, and another attempt of the payment may be settling.
    await hooks.onVerifyFailure(ctx);
    expect(lines).toEqual([{ level: 'warn', message: expect.stringMatching(/kept until it expires/) }]);
    // Invalid because its nonce is used: an attempt of this payment settled, and captures the hold.
    await hooks.onAfterVerify({
      ...ctx,
      result: { isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' },
    });
    expect(seen).toEqual([]);
    await hooks.onAfterVerify({
      ...ctx,
      result: { isValid: false, invalidReason: 'invalid_exact_evm_insufficient_balance' },
    });
    expect(seen.map((s) => s.url)).toEqual(['/api/decisions', `/api/budgets/${PAYER}/authorizations/9/void`]);
  });

  it('voids the hold of a payment a facilitator answered invalid with a failure, not a result, and keeps it for a used nonce', async () => {
    script = (req) => (req.url === '/api/decisions' ? ok(allow) : ok({ ...hold, status: 'voided' }));
    const voids = () => seen.filter((s) => s.url.endsWith('/void')).map((s) => s.url);
    // A resource server's HTTPFacilitatorClient throws a facilitator's non-2xx invalid answer as a
    // VerifyError: the failure hooks get it, with the facilitator's reason.
    const hooks = createVouchHooks({ url, logger: recordingLogger().logger });
    const invalid = (invalidReason: string) => new VerifyError(400, { isValid: false, invalidReason });
    await hooks.onVerifyFailure({ ...ctx, error: invalid('invalid_exact_evm_nonce_already_used') });
    expect(voids()).toEqual([]);
    await hooks.onVerifyFailure({ ...ctx, error: invalid('invalid_exact_evm_insufficient_balance') });
    expect(voids()).toEqual([`/api/budgets/${PAYER}/authorizations/9/void`]);

    // An x402Facilitator hands a scheme's invalid result (isValid: false) to its failure hooks,
    // never to its after-verify hooks.
    seen.length = 0;
    let answer = { isValid: false, invalidReason: 'invalid_exact_evm_insufficient_balance', invalidMessage: 'low' };
    const facilitator = new x402Facilitator().register('eip155:8453', {
      scheme: 'exact',
      caipFamily: 'eip155:*',
      getExtra: () => undefined,
      getSigners: () => [],
      verify: async () => answer,
      settle: async () => {
        throw new Error('not settled here');
      },
    } as never);
    registerVouchFacilitatorHooks(facilitator, { url, logger: recordingLogger().logger });
    const verify = () => facilitator.verify(ctx.paymentPayload as never, requirements as never);
    expect(await verify()).toMatchObject({ isValid: false });
    expect(seen.filter((s) => s.url === '/api/decisions')).toHaveLength(2); // decided, then read to void
    expect(voids()).toEqual([`/api/budgets/${PAYER}/authorizations/9/void`]);
    seen.length = 0;
    answer = { isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used', invalidMessage: 'used' };
    expect(await verify()).toMatchObject({ isValid: false });
    expect(voids()).toEqual([]);
  });
});
