import { type App, type AppDeps, buildApp } from '../../apps/api/src/app.ts';
import { createProcessors } from '../../apps/worker/src/index.ts';
import { type Clock, createReadCache, createServices, type Services } from '../../packages/core/src/index.ts';
import type { Database } from '../../packages/db/src/index.ts';
import { createInProcessRunner, type JobRunner, type Processors } from '../../packages/jobs/src/index.ts';
import { createTestDatabase } from './db.ts';

export interface TestContext {
  app: App;
  database: Database;
  services: Services;
  /** Moves the injected clock; starts at `start`. */
  clock: { now: Date; set(date: Date | string): void; advance(ms: number): void };
  close(): Promise<void>;
}

/** The real app on a real database, with a clock the test controls. */
export async function createTestApp(
  options: {
    start?: Date | string;
    poolMax?: number;
    /** `in-process`: the embedded runner with the real processors (optionally replaced). */
    jobs?: 'in-process' | ((db: Database, clock: Clock) => JobRunner);
    processors?: (real: Processors) => Processors;
    waitMs?: number;
    chunkSize?: number;
    refreshDelayMs?: number;
    chainRpcUrl?: string;
    /** A read cache on the test database's notifications. */
    cache?: boolean;
    /** Auth, rate limits, CORS and the like; by default auth and limits are off. */
    edge?: Partial<Omit<AppDeps, 'services' | 'database' | 'jobs'>>;
  } = {},
): Promise<TestContext & { jobs?: JobRunner }> {
  const database = await createTestDatabase({ poolMax: options.poolMax });
  const clock = {
    now: new Date(options.start ?? Date.now()),
    set(date: Date | string) {
      this.now = new Date(date);
    },
    advance(ms: number) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  const now: Clock = () => clock.now;
  let jobs: JobRunner | undefined;
  if (options.jobs === 'in-process') {
    const real = createProcessors(
      createServices({ db: database.db, clock: now, chainRpcUrl: options.chainRpcUrl }),
      'test-in-process',
    );
    jobs = createInProcessRunner({
      processors: options.processors ? options.processors(real) : real,
      waitMs: options.waitMs ?? 10_000,
    });
  } else if (options.jobs) {
    jobs = options.jobs(database, now);
  }
  const cache = options.cache ? await createReadCache(database) : undefined;
  const services = createServices({
    db: database.db,
    clock: now,
    cache,
    jobs,
    recomputeChunkSize: options.chunkSize,
    refreshDelayMs: options.refreshDelayMs,
    chainRpcUrl: options.chainRpcUrl,
  });
  await services.sanctions.ensureBundled();
  const app = await buildApp({ services, database, jobs, defaultMetrics: false, ...options.edge });
  await app.ready();
  return {
    app,
    database,
    services,
    clock,
    jobs,
    close: async () => {
      await app.close();
      await jobs?.close();
      await cache?.close();
      await database.close();
    },
  };
}
