import { type App, buildApp } from '../../apps/api/src/app.ts';
import { type Clock, createServices, type Services } from '../../packages/core/src/index.ts';
import type { Database } from '../../packages/db/src/index.ts';
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
export async function createTestApp(options: { start?: Date | string; poolMax?: number } = {}): Promise<TestContext> {
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
  const services = createServices({ db: database.db, clock: now });
  const app = await buildApp({ services });
  await app.ready();
  return {
    app,
    database,
    services,
    clock,
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}
