export { type Config, type ConfigEnv, ConfigError, loadConfig } from '@vouch/config';
export { createRuntime, type Role, type Runtime, type RuntimeOverrides } from './runtime.ts';
export { exitOnStartupFailure, stopOnSignals } from './startup.ts';
