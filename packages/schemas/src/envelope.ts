import { z } from 'zod';

export const errorCodes = [
  'VALIDATION_ERROR',
  'INVALID_JSON',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'AGENT_NOT_FOUND',
  'BUDGET_NOT_FOUND',
  'JOB_NOT_FOUND',
  'NOT_FOUND',
  'AUTHORIZATION_NOT_FOUND',
  'SPEND_NOT_FOUND',
  'DECISION_NOT_FOUND',
  'APPROVAL_NOT_FOUND',
  'POLICY_NOT_FOUND',
  'AGENT_ALREADY_REGISTERED',
  'ORGANIZATION_EXISTS',
  'TRANSACTION_CONFLICT',
  'IDEMPOTENCY_IN_PROGRESS',
  'AUTHORIZATION_NOT_HELD',
  'APPROVAL_NOT_PENDING',
  'POLICY_VERSION_CONFLICT',
  'WEBHOOK_DISABLED',
  'WEBHOOK_SECRET_LIMIT',
  'WEBHOOK_LIMIT',
  'REQUEST_TIMEOUT',
  'PAYLOAD_TOO_LARGE',
  'HEADERS_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'BUDGET_EXCEEDED',
  'BUDGET_NOT_SET',
  'AGENT_NOT_REGISTERED',
  'ERC8004_IDENTITY_NOT_FOUND',
  'ERC8004_FEEDBACK_REFUSED',
  'IDEMPOTENCY_KEY_REUSED',
  'CAPTURE_EXCEEDS_HOLD',
  'REFUND_NOT_ALLOWED',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_ERROR',
] as const;
export type ErrorCode = (typeof errorCodes)[number];

export const failureEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(errorCodes),
      message: z.string(),
      details: z.unknown().optional(),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'Failure' });
export type FailureEnvelope = z.infer<typeof failureEnvelope>;

export function successEnvelope<T extends z.ZodType>(data: T) {
  return z.object({ success: z.literal(true), data });
}
