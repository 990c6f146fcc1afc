import { type JobRunner, jobs } from '@vouch/jobs';
import type { AnomalyInput } from '../anomaly/anomaly.service.ts';
import type { Actor } from '../shared/actor.ts';

/** The checks that run on the queue: verification, sanctions screening, anomaly checks. Their jobs are the actor's organization's. */
export function createChecksJobs({ runner }: { runner: JobRunner }) {
  return {
    verify: (actor: Actor, address: string) =>
      runner.run(jobs.verify, { address, organizationId: actor.organizationId }),
    screen: (actor: Actor, address: string) =>
      runner.run(jobs.sanctions, { address, organizationId: actor.organizationId }),
    anomaly: (actor: Actor, input: AnomalyInput) =>
      runner.run(jobs.anomaly, { ...input, organizationId: actor.organizationId }),
  };
}

export type ChecksJobs = ReturnType<typeof createChecksJobs>;
