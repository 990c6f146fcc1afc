import type { AuditActor } from '@vouch/db';

/** The organization of a single-tenant install: everything that existed before organizations, and every request without a key. */
export const DEFAULT_ORGANIZATION = 'default';

/**
 * Who is acting: the organization whose budgets, ledger and settings a request sees, and the
 * key that made it. Every write records it in the organization's audit log.
 */
export interface Actor {
  organizationId: string;
  /** `key`: an API key; `admin`: the operator's ADMIN_API_KEY; `anonymous`: no key (AUTH off); `system`: the service itself. */
  kind: AuditActor;
  /** The API key's id (`admin` for ADMIN_API_KEY); null without a key. */
  keyId: string | null;
  /** The operator (ADMIN_API_KEY): may create organizations and act for any of them. */
  operator: boolean;
  /** The request that acted, for the audit log. */
  requestId?: string | undefined;
}

/** The service acting on its own (scheduled jobs, command-line tools), in the default organization unless told otherwise. */
export function systemActor(organizationId = DEFAULT_ORGANIZATION): Actor {
  return { organizationId, kind: 'system', keyId: null, operator: true };
}
