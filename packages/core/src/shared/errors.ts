import type { ErrorCode } from '@vouch/schemas';

/** HTTP status of every error code; the API's error handler is the only reader. */
export const errorStatus: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  AGENT_NOT_FOUND: 404,
  BUDGET_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  NOT_FOUND: 404,
  AUTHORIZATION_NOT_FOUND: 404,
  SPEND_NOT_FOUND: 404,
  DECISION_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  POLICY_NOT_FOUND: 404,
  AGENT_ALREADY_REGISTERED: 409,
  ORGANIZATION_EXISTS: 409,
  TRANSACTION_CONFLICT: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  AUTHORIZATION_NOT_HELD: 409,
  APPROVAL_NOT_PENDING: 409,
  POLICY_VERSION_CONFLICT: 409,
  WEBHOOK_DISABLED: 409,
  WEBHOOK_SECRET_LIMIT: 409,
  WEBHOOK_LIMIT: 409,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  UNSUPPORTED_MEDIA_TYPE: 415,
  BUDGET_EXCEEDED: 422,
  BUDGET_NOT_SET: 422,
  AGENT_NOT_REGISTERED: 422,
  ERC8004_IDENTITY_NOT_FOUND: 422,
  ERC8004_FEEDBACK_REFUSED: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  CAPTURE_EXCEEDS_HOLD: 422,
  REFUND_NOT_ALLOWED: 422,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
};

/** A failure the caller can act on, with a stable code. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

export class ValidationError extends DomainError {
  constructor(details: Array<{ path: string; message: string }>) {
    super('VALIDATION_ERROR', details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
  }
}

export class AgentNotFoundError extends DomainError {
  constructor(address: string) {
    super('AGENT_NOT_FOUND', `agent ${address} is not known`);
  }
}

export class AgentNotRegisteredError extends DomainError {
  constructor(address: string) {
    super('AGENT_NOT_REGISTERED', `agent ${address} has been observed but is not registered`);
  }
}

export class AgentAlreadyRegisteredError extends DomainError {
  constructor(address: string) {
    super('AGENT_ALREADY_REGISTERED', `agent ${address} is already registered`);
  }
}

export class BudgetNotFoundError extends DomainError {
  constructor(address: string) {
    super('BUDGET_NOT_FOUND', `agent ${address} has no budget`);
  }
}

export class BudgetNotSetError extends DomainError {
  constructor(address: string, asset = '') {
    super(
      'BUDGET_NOT_SET',
      asset === ''
        ? `agent ${address} has no budget; set one before spending`
        : `agent ${address} has no budget in ${asset}; set one before spending it`,
    );
  }
}

export class BudgetExceededError extends DomainError {
  /** `what` was refused: a spend, a hold or a capture. */
  constructor(details: Record<string, unknown> & { reason: string }, what: 'spend' | 'hold' | 'capture' = 'spend') {
    super('BUDGET_EXCEEDED', `${what} refused: ${details.reason}`, details);
  }
}

export class TransactionConflictError extends DomainError {
  constructor(txHash: string, fields: string[]) {
    super('TRANSACTION_CONFLICT', `transaction ${txHash} is already recorded with different content`, { fields });
  }
}

export class IdempotencyInProgressError extends DomainError {
  constructor() {
    super('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still being processed; retry shortly');
  }
}

export class IdempotencyKeyReusedError extends DomainError {
  constructor() {
    super('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request');
  }
}

export class ServiceUnavailableError extends DomainError {
  constructor(message = 'a dependency is unavailable; retry shortly') {
    super('SERVICE_UNAVAILABLE', message);
  }
}

/** The caller's key may not do this (another organization's agent, an operator-only action). */
export class ForbiddenError extends DomainError {
  constructor(message: string, details?: unknown) {
    super('FORBIDDEN', message, details);
  }
}

/** The request's credentials no longer count (a key revoked or expired while the request ran). */
export class UnauthorizedError extends DomainError {
  constructor(message: string) {
    super('UNAUTHORIZED', message);
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super('NOT_FOUND', message);
  }
}
