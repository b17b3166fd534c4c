import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { JobQueue } from './job-queue.ts';
import { QUEUE_NAMES } from './names.ts';

/**
 * Additions to bull-board's page (its HTML, served from the entry route): markup for the
 * head and the start of the body, outside the element its script renders into, so it stays.
 * `links`: entries of its header menu (bull-board's `miscLinks`).
 */
export interface QueueBoardPage {
  head?: string;
  bodyStart?: string;
  links?: Array<{ text: string; url: string }>;
}

/** `page` markup inserted once into an HTML answer; any other answer is left as it is. */
export function decorateBoardHtml(body: string, page: QueueBoardPage): string {
  let out = body;
  if (page.head) out = out.replace(/<\/head>/i, (tag) => `${page.head}${tag}`);
  if (page.bodyStart) out = out.replace(/<body[^>]*>/i, (tag) => `${tag}${page.bodyStart}`);
  return out;
}

/**
 * Serves bull-board (every queue of this process) under `basePath` of a Fastify server; the
 * BullMQ objects stay inside src/queue. The caller guards the routes (login, roles).
 *
 * bull-board, its view engine and its static UI are loaded on the first request under
 * `basePath`, into a Fastify instance of their own that requests are handed to: a console
 * nobody opens the Queues page of never pays for them (docs/operator.md, "Console").
 */
export function mountQueueBoard(server: FastifyInstance, queue: JobQueue, basePath: string, page: QueueBoardPage = {}): void {
  let board: Promise<FastifyInstance> | undefined;
  const load = async (): Promise<FastifyInstance> => {
    const [{ createBullBoard }, { BullMQAdapter }, { FastifyAdapter }, { default: Fastify }] = await Promise.all([
      import('@bull-board/api'),
      import('@bull-board/api/bullMQAdapter'),
      import('@bull-board/fastify'),
      import('fastify'),
    ]);
    const inner = Fastify({ logger: false });
    const adapter = new FastifyAdapter();
    createBullBoard({ queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queue.queues[name])), serverAdapter: adapter, options: { uiConfig: { boardTitle: 'trainsync queues', ...(page.links ? { miscLinks: page.links } : {}) } } });
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
    const isPage = /^text\/html/i.test(String(answer.headers['content-type'] ?? '')) && answer.headers['content-encoding'] === undefined;
    return reply.code(answer.statusCode).headers(answerHeaders).send(isPage ? decorateBoardHtml(answer.payload, page) : answer.rawPayload);
  };
  server.all(basePath, handOver);
  server.all(`${basePath}/*`, handOver);
}
