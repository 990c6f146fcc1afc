import { ConfigError, SHUTDOWN_GRACE_MS } from '@vouch/config';
import type { Runtime } from './runtime.ts';

/**
 * Ends a process whose start failed with one clear line on stderr, never a stack trace: a bad
 * setting names the variable; anything else (the database unreachable, a port taken) gives its
 * message's first line.
 */
export function exitOnStartupFailure(error: unknown, name: string, doing = 'could not start'): never {
  process.stderr.write(startupFailureLine(error, name, doing));
  process.exit(1);
}

/** The line exitOnStartupFailure prints. */
export function startupFailureLine(error: unknown, name: string, doing = 'could not start'): string {
  if (error instanceof ConfigError) return `${name}: ${error.message}\n`;
  return `${name}: ${doing}: ${reason(error)}\n`;
}

/**
 * An error's first line. A connection refused on every address of a name (`localhost` is `::1`
 * and 127.0.0.1 in most containers) is an AggregateError without a message: its errors say why.
 */
function reason(error: unknown): string {
  if (error instanceof AggregateError && !error.message && error.errors.length) {
    return [...new Set(error.errors.map(reason))].join('; ');
  }
  const message = error instanceof Error ? error.message || error.name : String(error);
  return message.split('\n')[0] as string;
}

/**
 * On SIGTERM or SIGINT, stops the process within SHUTDOWN_TIMEOUT_MS (and a second): the server
 * (when there is one) stops accepting and finishes its requests first — with this process's
 * workers still running the jobs those requests wait for — then the workers finish theirs, and the
 * runtime closes (queues, cache, database). Past the deadline the process exits anyway (1).
 */
export function stopOnSignals(runtime: Runtime, server?: { close(): Promise<unknown> }): void {
  const { logger, config } = runtime;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, server ? 'shutting down' : 'shutting down: finishing active jobs');
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + SHUTDOWN_GRACE_MS);
    deadline.unref();
    try {
      await server?.close();
      await runtime.close();
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
