import { z } from 'zod';
import { organizationId } from './organizations.ts';
import { unixSeconds } from './primitives.ts';

export const apiKeyScopes = ['read', 'spend', 'manage', 'approve', 'score', 'admin'] as const;
export const apiKeyScope = z.enum(apiKeyScopes).meta({
  description:
    '`read`: reads, checks and screenings; `spend`: spends, holds and decisions; `manage`: budgets, policies, webhooks, agents; ' +
    '`approve`: approvals; `score`: scores and transactions; `admin`: keys and the audit log (implies every other scope)',
});
export type ApiKeyScope = z.infer<typeof apiKeyScope>;

/** `write`, the scope before the finer ones, is still accepted when a key is created: it stands for spend, manage and score. */
export const requestedScope = z.enum([...apiKeyScopes, 'write']);
export type RequestedScope = z.infer<typeof requestedScope>;

export const createApiKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(100).meta({ description: 'What the key is for', example: 'checkout-service' }),
  scopes: z
    .array(requestedScope)
    .min(1)
    .max(7)
    .refine((s) => new Set(s).size === s.length, { message: 'scopes must not repeat' })
    .meta({ example: ['read', 'spend'], description: '`write` (deprecated) stands for spend, manage and score' }),
  organizationId: organizationId
    .optional()
    .meta({ description: 'The organization the key acts for (operator only); default: the caller’s' }),
  expiresAt: unixSeconds.optional().meta({
    description:
      'Unix seconds after which the key stops working; absent → never. A key that expires creates keys expiring no later than itself',
    example: 1798761600,
  }),
});
export type CreateApiKeyInput = z.infer<typeof createApiKeyBody>;

export const apiKeyParams = z.object({ id: z.string().min(1).max(64) });

export const apiKey = z
  .object({
    id: z.string().meta({ example: '3f9a1c0e5b7d2a64' }),
    organizationId,
    name: z.string(),
    scopes: z.array(apiKeyScope),
    status: z.enum(['active', 'expired', 'revoked']),
    expiresAt: unixSeconds.nullable(),
    createdAt: unixSeconds,
    lastUsedAt: unixSeconds.nullable().meta({ description: 'Approximate (updated at most once a minute)' }),
    revokedAt: unixSeconds.nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof apiKey>;

export const createdApiKey = z
  .object({
    id: z.string(),
    organizationId,
    name: z.string(),
    scopes: z.array(apiKeyScope),
    expiresAt: unixSeconds.nullable(),
    createdAt: unixSeconds,
    key: z.string().meta({
      description: 'The secret, shown only in this response; send it as `Authorization: Bearer <key>`',
      example: 'vk_3f9a1c0e5b7d2a64_Jm4nQ2l0ZXJhbGx5LWEtcmFuZG9tLXNlY3JldC1zdHJpbmc',
    }),
  })
  .meta({ id: 'CreatedApiKey' });
export type CreatedApiKey = z.infer<typeof createdApiKey>;

export const apiKeyList = z.object({ keys: z.array(apiKey) });
