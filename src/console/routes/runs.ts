import type { FastifyPluginAsync } from 'fastify';
import { getRun, listRuns, resourcesWithRuns, runQuarantine, runSeries, runUnfinishedWindows } from '../data/runs.ts';
import { page } from '../layout.ts';
import { runBody, runsBody } from '../pages/runs.ts';
import { dayOf, dayQuery, idParam, listQuery, PAGE_SIZE } from './queries.ts';
import { pageKit, send, type PageRoutesOptions } from './kit.ts';

/** Runs (`/runs`: filtered and paged, one resource's chart) and one run (`/runs/:id`: its quarantine and unfinished windows). */
export const runsRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, options) => {
  const { dbOf, handleOf, scopeOf, badFilter, queryOf, notFound } = pageKit(server, options);

  server.get('/runs', async (request, reply) => {
    // The day first: a bad one is answered with why, whatever else the query holds.
    const day = dayOf(dayQuery.parse(request.query).day);
    if (!day.ok) return badFilter(request, reply, 'Runs', day.message, '/runs');
    const q = queryOf(listQuery, request, reply, 'Runs', '/runs');
    if (!q) return reply;
    const { viewer, slugs, one } = scopeOf(request, reply);
    // The chart is one organisation's series: with several shown, it waits for a choice.
    const chartOrg = one ?? (slugs.length === 1 ? slugs[0] : undefined);
    const [list, resources, series] = await Promise.all([
      listRuns(dbOf(slugs), slugs, { resource: q.resource, status: q.status, day: day.day, page: q.page, pageSize: PAGE_SIZE }),
      resourcesWithRuns(dbOf(slugs), slugs),
      q.resource && chartOrg ? runSeries(dbOf(chartOrg), [chartOrg], q.resource) : Promise.resolve(undefined),
    ]);
    return send(reply, page('Runs', viewer, runsBody(viewer, { ...list, page: q.page, resources, resource: q.resource, status: q.status, day: day.day, series }), { chart: series !== undefined }));
  });

  server.get('/runs/:id', async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const { viewer, slugs } = scopeOf(request, reply);
    const run = await getRun(dbOf(slugs), slugs, id);
    if (!run) return notFound(reply, `run #${id}`);
    const [quarantined, windows] = await Promise.all([runQuarantine(handleOf(run.org), id), runUnfinishedWindows(handleOf(run.org), id)]);
    return send(reply, page(`Run #${id}`, viewer, runBody(viewer, run, quarantined, windows)));
  });
};
