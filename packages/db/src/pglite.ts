import type { PGlite } from '@electric-sql/pglite';
import {
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type TransactionSettings,
} from 'kysely';

/**
 * A Kysely dialect for an embedded PGlite database that loads PGlite (and starts it) on
 * first use: a process that talks to PostgreSQL never loads the embedded engine, which
 * would cost it ~30 MB of memory. The statements go through kysely-pglite-dialect's driver.
 */
export class LazyPgliteDialect implements Dialect {
  #client: Promise<PGlite> | undefined;

  constructor(private readonly dataDir: string) {}

  /** The PGlite instance, loaded and started by the first call. */
  client(): Promise<PGlite> {
    this.#client ??= import('@electric-sql/pglite').then(({ PGlite }) => new PGlite(this.dataDir));
    return this.#client;
  }

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new LazyDriver(async () => {
      const { PGliteDialect } = await import('kysely-pglite-dialect');
      return new PGliteDialect(await this.client()).createDriver();
    });
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}

/** Forwards every call to the driver `load` makes, once it is made. */
class LazyDriver implements Driver {
  #driver: Promise<Driver> | undefined;

  constructor(private readonly load: () => Promise<Driver>) {}

  #inner(): Promise<Driver> {
    this.#driver ??= this.load().then(async (driver) => {
      await driver.init();
      return driver;
    });
    return this.#driver;
  }

  async init(): Promise<void> {
    await this.#inner();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return (await this.#inner()).acquireConnection();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return (await this.#inner()).beginTransaction(connection, settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (await this.#inner()).commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (await this.#inner()).rollbackTransaction(connection);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    return (await this.#inner()).releaseConnection(connection);
  }

  async destroy(): Promise<void> {
    // Never started: nothing to stop.
    if (this.#driver) await (await this.#driver).destroy();
  }
}
