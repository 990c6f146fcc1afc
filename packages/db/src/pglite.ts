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
 * PGlite has one connection: a query waits for it at most `waitMs` (then fails as a database
 * that is not answering, 503), as a pooled connection is waited for on PostgreSQL.
 */
export class LazyPgliteDialect implements Dialect {
  #client: Promise<PGlite> | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly waitMs: number,
    /** A data directory's copy to start from (`dumpDataDir`), instead of a new one. */
    private readonly loadDataDir?: Blob,
  ) {}

  /** The PGlite instance, loaded and started by the first call. */
  client(): Promise<PGlite> {
    this.#client ??= import('@electric-sql/pglite').then(
      ({ PGlite }) => new PGlite(this.dataDir, this.loadDataDir ? { loadDataDir: this.loadDataDir } : {}),
    );
    return this.#client;
  }

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new LazyDriver(async () => {
      const { PGliteDialect } = await import('kysely-pglite-dialect');
      return new PGliteDialect(await this.client()).createDriver();
    }, this.waitMs);
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}

/**
 * The wait for the one connection ran out: it is busy for longer than a query may wait — under
 * load, or held by a transaction whose own code waits for this query (a read beside the
 * transaction instead of in it), which without a bound would hold the database for good.
 */
export class ConnectionWaitError extends Error {
  readonly code = 'ETIMEDOUT';

  constructor(waitMs: number) {
    super(`the embedded database's connection was not free within ${waitMs} ms`);
  }
}

/** Forwards every call to the driver `load` makes, once it is made; bounds the wait for a connection. */
class LazyDriver implements Driver {
  #driver: Promise<Driver> | undefined;

  constructor(
    private readonly load: () => Promise<Driver>,
    private readonly waitMs: number,
  ) {}

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
    const driver = await this.#inner();
    const pending = driver.acquireConnection();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ConnectionWaitError(this.waitMs)), this.waitMs);
      timer.unref();
    });
    try {
      return await Promise.race([pending, expired]);
    } catch (error) {
      // Given up on: the connection, when it comes, goes straight back to the queue.
      pending.then((connection) => driver.releaseConnection(connection)).catch(() => {});
      throw error;
    } finally {
      clearTimeout(timer);
    }
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
    if (!this.#driver) return;
    // PGlite's close ends its engine with exit(0), which sets process.exitCode to 0: a command
    // that reported a failure (exit code 1) and then closed its database would exit 0.
    const exitCode = process.exitCode;
    try {
      await (await this.#driver).destroy();
    } finally {
      process.exitCode = exitCode;
    }
  }
}
