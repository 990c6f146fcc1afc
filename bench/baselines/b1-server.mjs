// B1: a bare Fastify hello-world — the same `fastify` package the API uses (root
// node_modules), logger off, one route answering a small JSON body. Plain JavaScript run
// by plain node, as the API's bundle is. Usage: node b1-server.mjs <port>.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));

await app.listen({ port: Number(process.argv[2] ?? 3001), host: '127.0.0.1' });

const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
