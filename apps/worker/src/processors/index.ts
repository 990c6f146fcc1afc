import type { Services } from '@vouch/core';
import type { Processors } from '@vouch/jobs';
import { batchScoresProcessor } from './batch-scores.processor.ts';
import { anomalyProcessor, sanctionsProcessor, verifyProcessor } from './checks.processor.ts';
import { recomputeChunkProcessor, recomputeProcessor, refreshAgentProcessor } from './recompute.processor.ts';

/** Every job's processor, keyed by job name; the same set runs in workers and in-process. */
export function createProcessors(services: Services, worker: string): Processors {
  return {
    'scores.batch': batchScoresProcessor(services),
    'scores.recompute': recomputeProcessor(),
    'scores.recompute-chunk': recomputeChunkProcessor(services, worker),
    'scores.refresh-agent': refreshAgentProcessor(services, worker),
    'checks.verify': verifyProcessor(services),
    'checks.sanctions': sanctionsProcessor(services),
    'checks.anomaly': anomalyProcessor(services),
  };
}
