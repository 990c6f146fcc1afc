import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { sendFailure } from './errors.ts';

const BASE_PATH = '/admin/queues';

/**
 * bull-board on the API at /admin/queues. With the in-process runner there is no queue to show:
 * the path answers 404 saying why, rather than not existing. `readOnly` (AUTH off and no admin
 * key: anyone reaching the port sees it) lets it show jobs but not retry, remove or pause them.
 */
export async function queueDashboard(
  app: FastifyInstance,
  { queues, readOnly, ping }: { queues: Queue[]; readOnly: boolean; ping: () => Promise<void> },
) {
  if (queues.length === 0) {
    const handler = (request: Parameters<typeof sendFailure>[1], reply: Parameters<typeof sendFailure>[0]) =>
      sendFailure(
        reply,
        request,
        'NOT_FOUND',
        'no queue dashboard: jobs run inside this process (set REDIS_URL to run them on BullMQ with its dashboard)',
      );
    app.get(BASE_PATH, { schema: { hide: true } }, handler);
    app.get(`${BASE_PATH}/*`, { schema: { hide: true } }, handler);
    return;
  }
  // While Redis is away bull-board's own requests would wait for it: answer 503 at once instead.
  app.addHook('onRequest', (request, reply, done) => {
    const url = request.routeOptions.url ?? '';
    if (url !== BASE_PATH && !url.startsWith(`${BASE_PATH}/`)) return done();
    ping().then(
      () => done(),
      () => {
        sendFailure(reply, request, 'SERVICE_UNAVAILABLE', 'the job queue (Redis) is unavailable; retry shortly');
      },
    );
  });
  const serverAdapter = new FastifyAdapter();
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly })), serverAdapter });
  serverAdapter.setBasePath(BASE_PATH);
  await app.register(serverAdapter.registerPlugin(), { prefix: BASE_PATH });
}
