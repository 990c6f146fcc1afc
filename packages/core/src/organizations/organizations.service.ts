import { randomBytes } from 'node:crypto';
import type { DB, Kysely } from '@vouch/db';
import type { CreateOrganizationInput, Organization, UpdateOrganizationInput } from '@vouch/schemas';
import { GENESIS_HASH } from '../audit/audit.model.ts';
import { createHead } from '../audit/audit.repository.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { Actor } from '../shared/actor.ts';
import { type Clock, toUnixSeconds } from '../shared/clock.ts';
import { DomainError, ForbiddenError, NotFoundError } from '../shared/errors.ts';
import * as repo from './organizations.repository.ts';

export interface OrganizationsDeps {
  db: Kysely<DB>;
  clock: Clock;
  audit: AuditService;
}

export class OrganizationExistsError extends DomainError {
  constructor(id: string) {
    super('ORGANIZATION_EXISTS', `organization ${id} already exists`);
  }
}

function toOrganization(row: repo.OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    rateLimitPerMinute: row.rate_limit_per_minute,
    createdAt: toUnixSeconds(row.created_at),
  };
}

function requireOperator(actor: Actor, what: string): void {
  if (!actor.operator) throw new ForbiddenError(`only the operator (ADMIN_API_KEY) may ${what}`);
}

export function createOrganizationsService({ db, clock, audit }: OrganizationsDeps) {
  /** An organization the actor may see: its own, or any for the operator. */
  async function visible(actor: Actor, id: string): Promise<repo.OrganizationRow> {
    const row = actor.operator || id === actor.organizationId ? await repo.findOrganization(db, id) : undefined;
    if (!row) throw new NotFoundError(`no organization ${id}`);
    return row;
  }

  return {
    /** Creates an organization and starts its audit chain, whose first entry is its creation. */
    async create(actor: Actor, input: CreateOrganizationInput): Promise<Organization> {
      requireOperator(actor, 'create organizations');
      const id = input.id ?? `org_${randomBytes(8).toString('hex')}`;
      const now = clock();
      const row = await db.transaction().execute(async (trx) => {
        const inserted = await repo.insertOrganization(trx, {
          id,
          name: input.name,
          rateLimitPerMinute: input.rateLimitPerMinute ?? null,
          now,
        });
        if (!inserted) throw new OrganizationExistsError(id);
        await createHead(trx, id, GENESIS_HASH);
        await audit.append(
          trx,
          { ...actor, organizationId: id },
          'organization.created',
          null,
          {
            name: input.name,
            rateLimitPerMinute: input.rateLimitPerMinute ?? null,
          },
          now,
        );
        return inserted;
      });
      return toOrganization(row);
    },

    async list(actor: Actor): Promise<{ organizations: Organization[] }> {
      const rows = actor.operator ? await repo.listOrganizations(db) : [await visible(actor, actor.organizationId)];
      return { organizations: rows.map(toOrganization) };
    },

    async get(actor: Actor, id: string): Promise<Organization> {
      return toOrganization(await visible(actor, id));
    },

    async update(actor: Actor, id: string, patch: UpdateOrganizationInput): Promise<Organization> {
      requireOperator(actor, 'change organizations');
      const row = await db.transaction().execute(async (trx) => {
        const updated = await repo.updateOrganization(trx, id, patch);
        if (!updated) throw new NotFoundError(`no organization ${id}`);
        await audit.append(trx, { ...actor, organizationId: id }, 'organization.updated', null, { ...patch });
        return updated;
      });
      return toOrganization(row);
    },

    /** Whether the organization exists (a key is only created in one that does). */
    async exists(id: string): Promise<boolean> {
      return (await repo.findOrganization(db, id)) !== undefined;
    },

    /** Each organization's own requests-per-minute limit, where one is set. */
    rateLimits: () => repo.rateLimits(db),
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
