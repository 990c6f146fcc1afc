import { z } from 'zod';
import { unixSeconds } from './primitives.ts';

export const apiKeyScopes = ['read', 'write', 'admin'] as const;
export const apiKeyScope = z.enum(apiKeyScopes).meta({
  description: '`read`: GETs and stateless computations; `write`: every other write; `admin`: key management',
});
export type ApiKeyScope = z.infer<typeof apiKeyScope>;

export const createApiKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(100).meta({ description: 'What the key is for', example: 'checkout-service' }),
  scopes: z
    .array(apiKeyScope)
    .min(1)
    .max(3)
    .refine((s) => new Set(s).size === s.length, { message: 'scopes must not repeat' })
    .meta({ example: ['read', 'write'] }),
  expiresAt: unixSeconds
    .optional()
    .meta({ description: 'Unix seconds after which the key stops working; absent → never', example: 1798761600 }),
});
export type CreateApiKeyInput = z.infer<typeof createApiKeyBody>;

export const apiKeyParams = z.object({ id: z.string().min(1).max(64) });

export const apiKey = z
  .object({
    id: z.string().meta({ example: '3f9a1c0e5b7d2a64' }),
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
