import type { jobs, Processor } from '@vouch/jobs';
import type { Services } from '../services.ts';

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
  (payload) =>
    services.anomaly.check(payload);
