/**
 * B1: a bare Fastify hello-world — the same `fastify` package the API uses (root
 * node_modules), logger off, one route answering a small JSON body. Run as its own
 * process with `node --import tsx`, like the API. PORT from the environment.
 */
import Fastify from 'fastify';
import { envVar } from '../lib/env.ts';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));

const port = Number(envVar('PORT') ?? 3001);
await app.listen({ port, host: '127.0.0.1' });

const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
