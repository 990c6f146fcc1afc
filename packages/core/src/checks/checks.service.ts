import { type JobRunner, jobs } from '@vouch/jobs';
import type { AnomalyInput } from '../anomaly/anomaly.service.ts';

/** The checks that run on the queue: verification, sanctions screening, anomaly checks. */
export function createChecksJobs({ runner }: { runner: JobRunner }) {
  return {
    verify: (address: string) => runner.run(jobs.verify, { address }),
    screen: (address: string) => runner.run(jobs.sanctions, { address }),
    anomaly: (input: AnomalyInput) => runner.run(jobs.anomaly, input),
  };
}

export type ChecksJobs = ReturnType<typeof createChecksJobs>;
