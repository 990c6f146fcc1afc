import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';
import { DEFAULT_ORGANIZATION } from '../shared/actor.ts';

export const verifyProcessor =
  (services: Services): Processor<typeof jobs.verify> =>
  (payload) =>
    services.verification.verify(payload.address);

export const sanctionsProcessor =
  (services: Services): Processor<typeof jobs.sanctions> =>
  (payload) =>
    services.sanctions.screen(payload.address);

export const anomalyProcessor =
  (services: Services): Processor<typeof jobs.anomaly> =>
  ({ organizationId, ...input }) =>
    // Every producer names the organization (checks.service.ts); the payload schema keeps it optional.
    services.anomaly.check({ ...input, organizationId: organizationId ?? DEFAULT_ORGANIZATION });
