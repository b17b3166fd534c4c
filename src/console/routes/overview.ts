import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { listHeldPlans, type HeldPlanSummary } from '../../provisioning/index.ts';
import { cancelQueuedOrOrphaned, cancellableSyncs } from '../../sync/index.ts';
import { attentionCount, searchActions } from '../data/provisioning.ts';
import { latestRuns } from '../data/runs.ts';
import { page } from '../layout.ts';
import { overviewBody } from '../pages/overview.ts';
import { actingOrg, scheduleOrg } from '../scope.ts';
import { orgField } from './queries.ts';
import { pageKit, send, type PageRoutesOptions } from './kit.ts';

/** The Overview (`/`): latest runs, schedules, health, held plans, failed actions, syncs that can be cancelled; and the cancel buttons' change. */
export const overviewRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, options) => {
  const { deps } = options;
  const { dbOf, handleOf, inOrg, scopeOf, changeHooks, audit, refuseOutside, refuseNoOrg, outcomePage, viewerOf } = pageKit(server, options);

  server.get('/', async (request, reply) => {
    const { viewer, slugs } = scopeOf(request, reply);
    const [runs, schedules, health, held, attention, attentionTotal, cancellable] = await Promise.all([
      latestRuns(dbOf(slugs), slugs),
      deps.queue.schedules().catch(() => []),
      deps.health(),
      Promise.all(slugs.map((org) => listHeldPlans(handleOf(org), { onlyHeld: true }))).then(mergeHeld),
      searchActions(dbOf(slugs), slugs, { status: 'failed', page: 1, pageSize: 10 }),
      attentionCount(dbOf(slugs), slugs),
      Promise.all(slugs.map(async (org) => [...(await cancellableSyncs(deps.queue, handleOf(org)).catch(() => new Map()))].map(([resource, job]) => ({ org, resource, job })))).then((lists) => lists.flat()),
    ]);
    const pending = cancellable.map(({ org, resource, job }) => ({ org, resource, jobId: job.id, state: job.holder?.orphaned ? `orphaned (worker ${job.holder.worker ?? 'unknown'} is gone)` : job.state }));
    const ownSchedules = schedules.filter((s) => slugs.includes(scheduleOrg(s.id)));
    return send(reply, page('Overview', viewer, overviewBody({ viewer, runs, schedules: ownSchedules, health, held, attention: attention.rows, attentionTotal, pending, now: new Date() })));
  });

  server.post('/sync/:resource/cancel', changeHooks, async (request, reply) => {
    const resource = z.object({ resource: z.string().regex(/^[a-z-]{1,40}$/) }).parse(request.params).resource;
    const given = orgField.parse(request.body).org;
    if (refuseOutside(request, reply, given)) return reply;
    const org = actingOrg(viewerOf(request, reply).scope, given);
    if (!org) return refuseNoOrg(request, reply, 'Cancel', '/');
    const { username, role } = request.session!;
    const result = await cancelQueuedOrOrphaned(inOrg(org), resource, `${username} (${role}) in the console`);
    if (result.ok) await audit(request, handleOf(org), 'cancel-sync', resource, { job: result.job.id, how: result.how, runs: result.runs });
    const message = result.ok ? `Cancelled job ${result.job.id} (${result.job.name}, ${result.how})${result.runs > 0 ? '; its run recorded as cancelled' : ''}.` : result.reason;
    return outcomePage(request, reply, 'Cancel', message, '/', result.ok);
  });
};

/** Several organisations' lists of held plans as one, newest first, each plan once. */
function mergeHeld(lists: HeldPlanSummary[][]): HeldPlanSummary[] {
  return [...new Map(lists.flat().map((p) => [p.id, p])).values()].sort((a, b) => b.id - a.id).slice(0, 50);
}
