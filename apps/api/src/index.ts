export { type App, type AppDeps, appDeps, buildApp } from './app.ts';
export { edgeDeps } from './edge-config.ts';
export { createRateLimiter, leaseSize, type RateLimiter, type RateLimitOptions } from './rate-limiter.ts';
export { QUEUE_REPORT_MAX_AGE_MS, queueReporter } from './readiness.ts';
