import { ConfigError } from '@vouch/config';

/**
 * Ends a process whose start failed with one clear line on stderr, never a stack trace: a bad
 * setting names the variable; anything else (the database unreachable, a port taken) gives its
 * message's first line.
 */
export function exitOnStartupFailure(error: unknown, name: string, doing = 'could not start'): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`${name}: ${error.message}\n`);
  } else {
    const message = error instanceof Error ? error.message || error.name : String(error);
    process.stderr.write(`${name}: ${doing}: ${message.split('\n')[0]}\n`);
  }
  process.exit(1);
}
