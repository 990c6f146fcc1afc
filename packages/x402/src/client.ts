import { z } from 'zod';
import type { DecisionRequest } from './mapping.ts';

/**
 * A small client of the Vouch API over HTTP — what the hooks call. It imports nothing of Vouch's
 * own packages: integrators install only this one, and the answers are read with the schemas
 * below (the fields the hooks use; Vouch's answers carry more).
 */

export interface VouchClientOptions {
  /** The Vouch API, e.g. `https://vouch.example.com` (no trailing `/api`). */
  url: string;
  /** A key with the `spend` scope: decisions, holds, captures and voids. */
  apiKey?: string;
  /**
   * A key with the `score` scope to record settled transactions (`POST /api/transactions/record`);
   * default `apiKey`. Recording is the write of the organization that registered the payer.
   */
  recordApiKey?: string;
  /** Every call is given up after this long (default 3,000 ms): Vouch is then unavailable. */
  timeoutMs?: number;
  /** For tests and custom transports; default the global `fetch`. */
  fetch?: typeof fetch;
}

/** Vouch did not answer, or answered 5xx or 429 (a 409 of a payment being decided right now is a `VouchRequestError`, sent again first). */
export class VouchUnavailableError extends Error {
  override name = 'VouchUnavailableError';
}

/** Vouch refused the request (4xx): a bad key, a missing scope, a body it does not accept. */
export class VouchRequestError extends Error {
  override name = 'VouchRequestError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(`Vouch answered ${status} ${code}: ${message}`);
  }
}

/** Sends of a call whose key another call of the same payment holds (409 IDEMPOTENCY_IN_PROGRESS), and the wait before the n-th resend (n × this). */
const IN_PROGRESS_ATTEMPTS = 4;
const IN_PROGRESS_WAIT_MS = 50;

const authorization = z.object({
  authorizationId: z.string(),
  agent: z.string(),
  asset: z.string(),
  amount: z.string(),
  captured: z.string(),
  status: z.string(),
  expiresAt: z.number(),
  /** The hold read on its own: what the sanctions screen would find if it were captured now (null: it passes). */
  screening: z.string().nullable().optional(),
});
export type VouchAuthorization = z.infer<typeof authorization>;

const decision = z.object({
  decisionId: z.string(),
  decision: z.enum(['allow', 'deny', 'review']),
  reasons: z.array(z.object({ code: z.string(), detail: z.string() })),
  authorization: authorization.nullable(),
  approvalId: z.string().nullable(),
});
export type VouchDecision = z.infer<typeof decision>;

const capture = z.object({ authorization, spendId: z.string(), screening: z.string().nullable().optional() });
const record = z.object({ agent: z.string(), txHash: z.string(), chainStatus: z.string() });
const budgetCheck = z.object({
  allowed: z.boolean(),
  reason: z.string().nullable().optional(),
  dailyRemaining: z.string(),
  monthlyRemaining: z.string(),
});
const screening = z.object({ state: z.enum(['listed', 'clear', 'list_unavailable']), sanctioned: z.boolean() });

const failure = z.object({
  success: z.literal(false),
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});

export interface Answer<T> {
  data: T;
  /** `Idempotency-Replayed: true`: the stored answer of an earlier call with the same key. */
  replayed: boolean;
}

export class VouchClient {
  readonly timeoutMs: number;
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: VouchClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 3_000;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** `POST /api/decisions`: allow, deny or review — with `hold`, an allow also holds the amount. */
  decide(body: DecisionRequest, idempotencyKey: string): Promise<Answer<VouchDecision>> {
    return this.call('POST', '/api/decisions', decision, { body, idempotencyKey });
  }

  /** `GET /api/budgets/:agent/authorizations/:id`: a hold as it is now. */
  async authorization(agent: string, id: string): Promise<VouchAuthorization> {
    return (await this.call('GET', `/api/budgets/${agent}/authorizations/${id}`, authorization)).data;
  }

  /**
   * Spends `amount` of a hold and releases the rest. `settled`: the payment has already moved, so
   * it is recorded whatever the sanctions screen now finds (the answer's `screening` says what).
   */
  capture(agent: string, id: string, amount: bigint, idempotencyKey: string, settled = false) {
    return this.call('POST', `/api/budgets/${agent}/authorizations/${id}/capture`, capture, {
      body: settled ? { amount: amount.toString(), settled } : { amount: amount.toString() },
      idempotencyKey,
    });
  }

  /** Releases a hold, spending nothing. */
  void(agent: string, id: string, idempotencyKey: string) {
    return this.call('POST', `/api/budgets/${agent}/authorizations/${id}/void`, authorization, {
      body: {},
      idempotencyKey,
    });
  }

  /** `POST /api/transactions/record` with the `score` key. */
  record(
    body: { agent: string; txHash: string; amount: string; asset: string; type: number; counterparty: string },
    idempotencyKey: string,
  ) {
    return this.call('POST', '/api/transactions/record', record, {
      body,
      idempotencyKey,
      key: this.options.recordApiKey ?? this.options.apiKey,
    });
  }

  /** `POST /api/budgets/:agent/check`: would the budget allow `amount` of `asset` now (changes nothing)? */
  async checkBudget(agent: string, body: { amount: string; asset: string }) {
    return (await this.call('POST', `/api/budgets/${agent}/check`, budgetCheck, { body })).data;
  }

  /** `POST /api/verify/sanctions`: is the address on the active sanctions list? */
  async screen(address: string) {
    return (await this.call('POST', '/api/verify/sanctions', screening, { body: { address } })).data;
  }

  /**
   * One call; one whose key another call of the same payment is still using (409
   * IDEMPOTENCY_IN_PROGRESS) is sent again a few times, then refused as that request error: a
   * payment sent many times at once is not an outage, and never passes as one (fail-open).
   */
  private async call<T>(
    method: 'GET' | 'POST',
    path: string,
    schema: z.ZodType<T>,
    options: { body?: unknown; idempotencyKey?: string; key?: string | undefined } = {},
  ): Promise<Answer<T>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.callOnce(method, path, schema, options);
      } catch (error) {
        const busy = error instanceof VouchRequestError && error.code === 'IDEMPOTENCY_IN_PROGRESS';
        if (!busy || attempt >= IN_PROGRESS_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, IN_PROGRESS_WAIT_MS * attempt));
      }
    }
  }

  private async callOnce<T>(
    method: 'GET' | 'POST',
    path: string,
    schema: z.ZodType<T>,
    options: { body?: unknown; idempotencyKey?: string; key?: string | undefined },
  ): Promise<Answer<T>> {
    const key = options.key ?? this.options.apiKey;
    const headers: Record<string, string> = {
      ...(options.body !== undefined && { 'content-type': 'application/json' }),
      ...(key && { authorization: `Bearer ${key}` }),
      ...(options.idempotencyKey && { 'idempotency-key': options.idempotencyKey }),
    };
    let response: Response;
    let text: string;
    try {
      // One deadline for the answer and its body: a Vouch that hangs mid-body is unavailable too.
      const signal = AbortSignal.timeout(this.timeoutMs);
      response = await this.fetch(`${this.base}${path}`, {
        method,
        headers,
        signal,
        ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      });
      text = await response.text();
    } catch (error) {
      const why =
        error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : error;
      throw new VouchUnavailableError(`${method} ${path}: ${why instanceof Error ? why.message : String(why)}`, {
        cause: error,
      });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      if (response.status >= 500 || response.status === 429)
        throw new VouchUnavailableError(`${method} ${path}: ${response.status}`);
      throw new VouchRequestError(response.status, 'NOT_JSON', text.slice(0, 200), undefined);
    }
    if (!response.ok) {
      const parsed = failure.safeParse(json);
      const code = parsed.success ? parsed.data.error.code : 'UNKNOWN';
      const message = parsed.success ? parsed.data.error.message : text.slice(0, 200);
      if (response.status >= 500 || response.status === 429)
        throw new VouchUnavailableError(`${method} ${path}: ${response.status} ${code}: ${message}`);
      throw new VouchRequestError(
        response.status,
        code,
        message,
        parsed.success ? parsed.data.error.details : undefined,
      );
    }
    const data = z.object({ success: z.literal(true), data: schema }).safeParse(json);
    if (!data.success) throw new VouchRequestError(response.status, 'UNEXPECTED_ANSWER', data.error.message, json);
    return { data: data.data.data, replayed: response.headers.get('idempotency-replayed') === 'true' };
  }
}
