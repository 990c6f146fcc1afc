import type { Services } from '@vouch/core';
import type { jobs, Processor } from '@vouch/jobs';
import { domainErrors } from './wrap.ts';

export const batchScoresProcessor = (services: Services): Processor<typeof jobs.batchScores> =>
  domainErrors((payload, ctx) => services.scores.applyBatch(payload.entries, ctx.jobId));
