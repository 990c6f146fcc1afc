export * from './client.ts';
export * from './client-hook.ts';
export * from './hooks.ts';
export * from './mapping.ts';
export * from './signature.ts';
