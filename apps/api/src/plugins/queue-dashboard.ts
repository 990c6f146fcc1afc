import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

const BASE_PATH = '/admin/queues';

/** bull-board on the API at /admin/queues. */
export async function queueDashboard(app: FastifyInstance, { queues }: { queues: Queue[] }) {
  const serverAdapter = new FastifyAdapter();
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  serverAdapter.setBasePath(BASE_PATH);
  await app.register(serverAdapter.registerPlugin(), { prefix: BASE_PATH });
}
