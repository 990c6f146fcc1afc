import { z } from 'zod';
import { address, pageLimit, timeRangedQuery, unixSeconds } from './primitives.ts';

/** An organization's id: lowercase letters, digits, `_` and `-`, 1–64 characters. */
export const organizationId = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,63}$/,
    'must be 1–64 lowercase letters, digits, _ or -, starting with a letter or digit',
  )
  .meta({ description: 'Organization id', example: 'acme' });

export const organizationParams = z.object({ id: organizationId });

export const createOrganizationBody = z.strictObject({
  id: organizationId.optional().meta({ description: 'Chosen id; absent → generated (`org_` + 16 hex)' }),
  name: z.string().trim().min(1).max(200).meta({ example: 'Acme Payments' }),
  rateLimitPerMinute: z.number().int().min(1).max(1_000_000_000).optional().meta({
    description: 'Requests per minute shared by all the organization’s keys; absent → RATE_LIMIT_ORGANIZATION',
  }),
});
export type CreateOrganizationInput = z.infer<typeof createOrganizationBody>;

export const updateOrganizationBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    rateLimitPerMinute: z.number().int().min(1).max(1_000_000_000).nullable().optional().meta({
      description: 'null → back to RATE_LIMIT_ORGANIZATION',
    }),
  })
  .refine((b) => b.name !== undefined || b.rateLimitPerMinute !== undefined, { message: 'nothing to change' });
export type UpdateOrganizationInput = z.infer<typeof updateOrganizationBody>;

export const organization = z
  .object({
    id: organizationId,
    name: z.string(),
    rateLimitPerMinute: z.number().int().nullable(),
    createdAt: unixSeconds,
  })
  .meta({ id: 'Organization' });
export type Organization = z.infer<typeof organization>;

export const organizationList = z.object({ organizations: z.array(organization) });

/** An audit action: `<area>.<what>`. */
export const auditAction = z
  .string()
  .regex(/^[a-z_]+(\.[a-z_]+)+$/, 'must look like budget.set')
  .max(64)
  .meta({ example: 'budget.set' });

export const auditQuery = timeRangedQuery({
  limit: pageLimit(),
  cursor: z.string().max(512).optional(),
  action: auditAction.optional(),
  target: address.optional().meta({ description: 'The agent the entry is about' }),
  actorKeyId: z.string().min(1).max(64).optional(),
  organizationId: organizationId
    .optional()
    .meta({ description: 'Another organization’s log (operator only); default: the caller’s' }),
});
export type AuditQuery = z.infer<typeof auditQuery>;

export const auditEntry = z
  .object({
    seq: z.string().meta({ description: 'Position in the organization’s chain (1, 2, …), a decimal string' }),
    organizationId,
    action: z.string(),
    actor: z.enum(['key', 'admin', 'anonymous', 'system']),
    actorKeyId: z.string().nullable(),
    target: z.string().nullable(),
    requestId: z.string().nullable(),
    at: unixSeconds,
    details: z.record(z.string(), z.unknown()),
    prevHash: z.string().meta({ description: 'Hash of the entry before (64 zeros for the first)' }),
    hash: z.string().meta({ description: 'sha256_hex(prevHash + "\\n" + seq + "\\n" + entry)' }),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntry = z.infer<typeof auditEntry>;

export const auditList = z.object({ entries: z.array(auditEntry), nextCursor: z.string().nullable() });

export const auditExportQuery = z.strictObject({
  organizationId: organizationId.optional().meta({ description: 'Another organization’s log (operator only)' }),
});
