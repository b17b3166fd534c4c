import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { JobQueue } from './job-queue.ts';
import { QUEUE_NAMES } from './names.ts';

/**
 * Mounts bull-board (every queue of this process) at `basePath` of a Fastify server; the
 * BullMQ objects stay inside src/queue. The caller guards the routes (login, roles).
 */
export async function mountQueueBoard(server: FastifyInstance, queue: JobQueue, basePath: string): Promise<void> {
  const adapter = new FastifyAdapter();
  createBullBoard({ queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queue.queues[name])), serverAdapter: adapter, options: { uiConfig: { boardTitle: 'trainsync queues' } } });
  adapter.setBasePath(basePath);
  await server.register(adapter.registerPlugin(), { prefix: basePath });
}
