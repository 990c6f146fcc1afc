export * from './agents.ts';
export * from './budgets.ts';
export * from './envelope.ts';
export * from './jobs.ts';
export * from './primitives.ts';
export * from './scores.ts';
export * from './transactions.ts';
