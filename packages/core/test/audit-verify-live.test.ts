import { type Actor, createAuditService, type Services, systemActor } from '@vouch/core';
import type { Database, KyselyPlugin } from '@vouch/db';
import { createTestDatabase, createTestRuntime, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
let services: Services;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ services } = await createTestRuntime(database, { loadSanctions: false }));
});
afterAll(() => database?.close());

const operator = systemActor();

async function organization(id: string, entries: number): Promise<Actor> {
  await services.organizations.create(operator, { id, name: id });
  const actor: Actor = { organizationId: id, kind: 'key', keyId: `${id}-key`, operator: false, requestId: 'r' };
  for (let i = 0; i < entries - 1; i++) await services.audit.record(actor, 'test.entry', randomAddress(), { i });
  return actor;
}

describe('audit:verify on a live database (another API process appending meanwhile)', () => {
  it('does not report an untouched chain broken when an entry is appended while it walks', async () => {
    const actor = await organization('live', 3);
    // After verify's first statement (it reads the heads) another process appends one entry
    // and commits, before verify reads the log: what two API processes and an operator do.
    let appended: Promise<void> | undefined;
    const plugin: KyselyPlugin = {
      transformQuery: (args) => args.node,
      async transformResult(args) {
        if (!appended) {
          appended = services.audit.record(actor, 'test.entry', randomAddress(), { late: true });
          // On one connection (PGlite) an append waits for a verify that holds it: do not wait for it forever.
          await Promise.race([appended, new Promise((resolve) => setTimeout(resolve, 1000))]);
        }
        return args.result;
      },
    };
    const audit = createAuditService({ db: database.db.withPlugin(plugin), clock: () => new Date() });
    const result = await audit.verify('live');
    await appended;
    expect(result.broken).toEqual([]);
    // And nothing was changed: the chain, read again, is intact with the late entry.
    expect(await services.audit.verify('live')).toEqual({ organizations: 1, entries: 4, broken: [] });
  });

  it('never reports a chain broken while entries are appended concurrently', async () => {
    const actor = await organization('busy-live', 2);
    let stop = false;
    const writer = (async () => {
      while (!stop) await services.audit.record(actor, 'test.entry', randomAddress(), {});
    })();
    const reports: string[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        const result = await services.audit.verify('busy-live');
        for (const b of result.broken) reports.push(`${b.seq}: ${b.problem}`);
      }
    } finally {
      stop = true;
      await writer;
    }
    expect(reports).toEqual([]);
    expect((await services.audit.verify('busy-live')).broken).toEqual([]);
  });
});
