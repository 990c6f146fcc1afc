export { type App, type AppDeps, buildApp } from './app.ts';
export { type ApiConfig, apiConfigSchema, loadApiConfig } from './config.ts';
