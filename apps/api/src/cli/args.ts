import { type ParseArgsConfig, parseArgs } from 'node:util';

/** Ends a command that was called wrongly: what is wrong (if said) and its usage, exit 2. */
export function usageExit(command: string, usage: string, problem?: string): never {
  if (problem) console.error(`${command}: ${problem}`);
  console.error(`usage: ${usage}`);
  return process.exit(2);
}

/**
 * A command's arguments. A mistyped option, a missing value or a stray argument ends it with one
 * line and the usage (exit 2), before anything is read or written: not a stack trace, and not the
 * command done another way than meant (the default organization's chain, a migration up).
 */
export function cliArgs<T extends ParseArgsConfig>(command: string, usage: string, config: T) {
  try {
    return parseArgs(config);
  } catch (error) {
    return usageExit(command, usage, (error as Error).message.split('.')[0]);
  }
}
