import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type HTTPMethods } from 'fastify';
import type { JobQueue } from './job-queue.ts';
import { QUEUE_NAMES } from './names.ts';

/**
 * Serves bull-board (every queue of this process) under `basePath` of a Fastify server; the
 * BullMQ objects stay inside src/queue. The caller guards the routes (login, roles).
 *
 * bull-board, its view engine and its static UI are loaded on the first request under
 * `basePath`, into a Fastify instance of their own that requests are handed to: a console
 * nobody opens the Queues page of never pays for them (README, "Console", memory).
 */
export function mountQueueBoard(server: FastifyInstance, queue: JobQueue, basePath: string): void {
  let board: Promise<FastifyInstance> | undefined;
  const load = async (): Promise<FastifyInstance> => {
    const [{ createBullBoard }, { BullMQAdapter }, { FastifyAdapter }] = await Promise.all([
      import('@bull-board/api'),
      import('@bull-board/api/bullMQAdapter'),
      import('@bull-board/fastify'),
    ]);
    const inner = Fastify({ logger: false });
    const adapter = new FastifyAdapter();
    createBullBoard({ queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queue.queues[name])), serverAdapter: adapter, options: { uiConfig: { boardTitle: 'trainsync queues' } } });
    adapter.setBasePath(basePath);
    await inner.register(adapter.registerPlugin(), { prefix: basePath });
    await inner.ready();
    return inner;
  };
  const handOver = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    board ??= load().catch((error: unknown) => {
      board = undefined;
      throw error;
    });
    const inner = await board;
    const { 'content-length': _length, ...headers } = request.headers;
    const answer = await inner.inject({
      method: request.method as HTTPMethods,
      url: request.url,
      headers,
      ...(request.body === undefined ? {} : { payload: typeof request.body === 'string' || Buffer.isBuffer(request.body) ? request.body : JSON.stringify(request.body) }),
    });
    const { 'content-length': _answerLength, 'transfer-encoding': _encoding, connection: _connection, ...answerHeaders } = answer.headers;
    return reply.code(answer.statusCode).headers(answerHeaders).send(answer.rawPayload);
  };
  server.all(basePath, handOver);
  server.all(`${basePath}/*`, handOver);
}
