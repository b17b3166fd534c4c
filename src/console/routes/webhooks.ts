import type { FastifyPluginAsync } from 'fastify';
import { recentRefusals, webhookBacklog } from '../../webhooks/index.ts';
import { recentEvents } from '../data/webhooks.ts';
import { page } from '../layout.ts';
import { webhooksBody } from '../pages/webhooks.ts';
import { listQuery, PAGE_SIZE } from './queries.ts';
import { pageKit, send, type PageRoutesOptions } from './kit.ts';

/** Webhooks (`/webhooks`): the backlog, recent events by outcome, refused deliveries. */
export const webhooksRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, options) => {
  const { dbOf, scopeOf, queryOf } = pageKit(server, options);

  server.get('/webhooks', async (request, reply) => {
    const q = queryOf(listQuery, request, reply, 'Webhooks', '/webhooks');
    if (!q) return reply;
    const { viewer, slugs } = scopeOf(request, reply);
    const [backlog, events, refusals] = await Promise.all([
      webhookBacklog(dbOf(slugs), slugs),
      recentEvents(dbOf(slugs), slugs, { outcome: q.outcome, page: q.page, pageSize: PAGE_SIZE }),
      recentRefusals(dbOf(slugs), slugs, { page: q.rpage, pageSize: PAGE_SIZE }),
    ]);
    return send(reply, page('Webhooks', viewer, webhooksBody(viewer, backlog, events.rows, events.hasMore, q.page, q.outcome, { ...refusals, page: q.rpage }, new Date())));
  });
};
