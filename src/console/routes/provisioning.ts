import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { approveHeldPlan, getHeldPlan, listHeldPlans, loadGroupNames, rejectHeldPlan, retryFailedAction, type HeldPlan, type HeldPlanSummary } from '../../provisioning/index.ts';
import { quarantinedUsersOf } from '../../scim/index.ts';
import { consoleChanges, recentFeeds, searchActions } from '../data/provisioning.ts';
import { redirectWithFlash } from '../flash.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import { heldPlanBody, provisioningBody } from '../pages/provisioning.ts';
import { actingOrg, orgOfRow } from '../scope.ts';
import { dayOf, dayQuery, decisionFields, idParam, listQuery, orgField, PROVISIONING_PAGE_SIZE } from './queries.ts';
import { pageKit, send, type PageRoutesOptions } from './kit.ts';

/**
 * Provisioning (`/provisioning`: held plans, feeds, actions, the console's changes, SCIM's
 * quarantine), one held plan and its approval or rejection, and the retry of a failed action.
 */
export const provisioningRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, options) => {
  const { deps } = options;
  const { dbOf, handleOf, scopeOf, viewerOf, badFilter, queryOf, notFound, changeHooks, audit, refuseOutside, refuseNoOrg, outcomePage } = pageKit(server, options);

  /** One page of the held plans of `slugs`, newest first (ids are global: one order across organisations). */
  const heldPlansPage = async (slugs: readonly string[], pageNo: number, size: number): Promise<{ rows: HeldPlanSummary[]; hasMore: boolean }> => {
    const offset = (pageNo - 1) * size;
    // Each organisation's first offset + size + 1, merged: the page and whether one follows.
    const lists = await Promise.all(slugs.map((org) => listHeldPlans(handleOf(org), { limit: offset + size + 1 })));
    const merged = [...new Map(lists.flat().map((p) => [p.id, p])).values()].sort((a, b) => b.id - a.id).slice(offset, offset + size + 1);
    return { rows: merged.slice(0, size), hasMore: merged.length > size };
  };

  server.get('/provisioning', async (request, reply) => {
    // The day first: a bad one is answered with why, whatever else the query holds.
    const day = dayOf(dayQuery.parse(request.query).day);
    if (!day.ok) return badFilter(request, reply, 'Provisioning', day.message, '/provisioning');
    const q = queryOf(listQuery, request, reply, 'Provisioning', '/provisioning');
    if (!q) return reply;
    const { viewer, slugs } = scopeOf(request, reply);
    const size = PROVISIONING_PAGE_SIZE;
    const filter = { who: q.who, day: day.day, status: q.status, feed: q.feed, page: q.page, pageSize: size };
    const [held, feeds, actions, changes, quarantined] = await Promise.all([
      heldPlansPage(slugs, q.hpage, size),
      recentFeeds(dbOf(slugs), slugs, { page: q.fpage, pageSize: size }),
      searchActions(dbOf(slugs), slugs, filter),
      consoleChanges(dbOf(slugs), slugs, { page: q.cpage, pageSize: size, spanning: !viewer.scope.limited }),
      quarantinedUsersOf(dbOf(slugs), slugs, size),
    ]);
    const pages = { held: q.hpage, feeds: q.fpage, changes: q.cpage };
    // The newest `size` of each organisation, newest first overall, and the count of all.
    const scimQuarantined = {
      rows: quarantined.rows.sort((a, b) => b.quarantined_at.getTime() - a.quarantined_at.getTime()).slice(0, size),
      total: [...quarantined.counts.values()].reduce((a, b) => a + b, 0),
    };
    return send(reply, page('Provisioning', viewer, provisioningBody(viewer, { held, feeds, actions, filter, changes, pages, scimQuarantined })));
  });

  /** A held plan, if it is one of the organisations shown (ids are global; the plan names its organisation). */
  const heldPlanIn = async (slugs: readonly string[], id: number): Promise<{ plan: HeldPlan; org: string } | undefined> => {
    const plan = await getHeldPlan(dbOf(slugs), id);
    if (!plan) return undefined;
    const org = orgOfRow(plan) ?? slugs[0]!;
    return slugs.includes(org) ? { plan, org } : undefined;
  };

  server.get('/provisioning/held/:id', async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const { viewer, slugs } = scopeOf(request, reply);
    const found = await heldPlanIn(slugs, id);
    if (!found) return notFound(reply, `held plan #${id}`);
    return send(reply, page(`Held plan #${id}`, viewer, heldPlanBody(viewer, found.plan, found.org, await loadGroupNames(handleOf(found.org)))));
  });

  // Approve and reject act in the plan's own organisation, whatever the page's scope, if the user may see it.
  server.post('/provisioning/held/:id/approve', changeHooks, async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const found = await heldPlanIn(viewerOf(request, reply).scope.orgs.map((o) => o.slug), id);
    if (!found) return notFound(reply, `held plan #${id}`);
    const { confirm } = decisionFields.parse(request.body);
    const decider = { by: request.session!.username, role: request.session!.role };
    const result = await approveHeldPlan(deps.repair(found.org), id, decider, { typed: confirm, ask: { give: 'the number of people who will lose access', shownBy: "the plan's page" } });
    // Without the typed count (or with another), the request itself is wrong: 400, nothing changed.
    if (!result.ok && result.code === 'confirm') {
      return send(reply.code(400), page(`Plan #${id}`, viewerOf(request, reply), html`<p class="error" id="outcome">Not approved: ${result.reason}</p><p><a href="/provisioning/held/${id}">Back</a></p>`));
    }
    if (result.ok) await audit(request, handleOf(found.org), 'approve-held-plan', `plan #${id}`, { enqueued: result.enqueued.length, confirmed: Number(confirm), source: found.plan.source });
    if (!result.ok) return outcomePage(request, reply, `Plan #${id}`, result.reason, `/provisioning/held/${id}`, false);
    // Post/Redirect/Get: the plan's page, with what the approval did; a reload posts nothing again.
    return redirectWithFlash(request, reply, `/provisioning/held/${id}`, `Plan #${id} approved: ${result.enqueued.length} actions enqueued; the workers apply them (see the audit trail).`);
  });

  server.post('/provisioning/held/:id/reject', changeHooks, async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const found = await heldPlanIn(viewerOf(request, reply).scope.orgs.map((o) => o.slug), id);
    if (!found) return notFound(reply, `held plan #${id}`);
    const { reason } = decisionFields.parse(request.body);
    const result = await rejectHeldPlan(deps.repair(found.org), id, { by: request.session!.username, role: request.session!.role, note: reason });
    if (result.ok) await audit(request, handleOf(found.org), 'reject-held-plan', `plan #${id}`, reason ? { reason } : {});
    if (!result.ok) return outcomePage(request, reply, `Plan #${id}`, result.reason, `/provisioning/held/${id}`, false);
    return redirectWithFlash(request, reply, `/provisioning/held/${id}`, `Plan #${id} rejected: nothing was enqueued.`);
  });

  // Action ids repeat across organisations: the row's button sends its organisation.
  server.post('/provisioning/actions/:actionId/retry', changeHooks, async (request, reply) => {
    const actionId = z.object({ actionId: z.string().min(1).max(300) }).parse(request.params).actionId;
    const given = orgField.parse(request.body).org;
    if (refuseOutside(request, reply, given)) return reply;
    const org = actingOrg(viewerOf(request, reply).scope, given);
    if (!org) return refuseNoOrg(request, reply, 'Retry', '/provisioning?status=failed');
    const result = await retryFailedAction(deps.repair(org), actionId);
    if (result.ok) await audit(request, handleOf(org), 'retry-action', actionId);
    return outcomePage(request, reply, 'Retry', result.ok ? `Action enqueued again: ${actionId}` : result.reason, '/provisioning?status=failed', result.ok);
  });
};
