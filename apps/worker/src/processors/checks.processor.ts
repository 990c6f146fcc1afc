import type { Services } from '@vouch/core';
import type { jobs, Processor } from '@vouch/jobs';
import { domainErrors } from './wrap.ts';

export const verifyProcessor = (services: Services): Processor<typeof jobs.verify> =>
  domainErrors((payload) => services.verification.verify(payload.address));

export const sanctionsProcessor = (services: Services): Processor<typeof jobs.sanctions> =>
  domainErrors((payload) => services.sanctions.screen(payload.address));

export const anomalyProcessor = (services: Services): Processor<typeof jobs.anomaly> =>
  domainErrors((payload) => services.anomaly.check(payload));
