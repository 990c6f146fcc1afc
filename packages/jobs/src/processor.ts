import type { AnyJob, JobName, PayloadOf, ResultOf } from './registry.ts';

export interface JobContext {
  jobId: string;
  attempt: number;
  updateProgress(progress: number): Promise<void>;
  /** Results of a flow parent's children. */
  childrenValues(): Promise<unknown[]>;
}

export type Processor<J extends AnyJob> = (
  payload: ReturnType<J['payload']['parse']>,
  ctx: JobContext,
) => Promise<ResultOf<J>>;

/** Exactly one processor per job name. */
export type Processors = { [N in JobName]: Processor<Extract<AnyJob, { name: N }>> };

export type { PayloadOf };
