import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { loadGroupNames, RECONCILIATION_KINDS, reconcileFix, reconciliationReport } from '../../provisioning/index.ts';
import { assignmentsIn, assignmentStatusBy, discrepancies, parseGroupBy } from '../data/people.ts';
import { page } from '../layout.ts';
import { assignmentsBody } from '../pages/assignments.ts';
import { consoleWording } from '../pages/console-words.ts';
import { discrepanciesBody } from '../pages/discrepancies.ts';
import { peopleBody } from '../pages/people.ts';
import { repairBody } from '../pages/repair.ts';
import { actingOrg } from '../scope.ts';
import { listQuery, orgField, PAGE_SIZE } from './queries.ts';
import { pageKit, send, type PageRoutesOptions } from './kit.ts';

/**
 * People (`/people`: reconciliation and assignment status by group), its lists (assignments,
 * discrepancies of a kind) and drift repair (its dry run, and applying it): one organisation at a time.
 */
export const peopleRoutes: FastifyPluginAsync<PageRoutesOptions> = async (server, options) => {
  const { deps } = options;
  const { handleOf, scopeOf, viewerOf, queryOf, chooseOne, changeHooks, audit, refuseOutside, refuseNoOrg, outcomePage } = pageKit(server, options);

  server.get('/people', async (request, reply) => {
    const q = queryOf(listQuery, request, reply, 'People', '/people');
    if (!q) return reply;
    const by = parseGroupBy(q.by);
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'People');
    const [report, statuses] = await Promise.all([reconciliationReport(handleOf(one), 5), assignmentStatusBy(handleOf(one), by)]);
    return send(reply, page('People', viewer, peopleBody(report, by, statuses)));
  });

  server.get('/people/assignments', async (request, reply) => {
    const q = queryOf(listQuery.extend({ status: z.string().max(40).refine((v) => !v.includes('\u0000')) }), request, reply, 'Assignments', '/people');
    if (!q) return reply;
    const by = parseGroupBy(q.by);
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'Assignments');
    const group = q.group ?? '';
    const list = await assignmentsIn(handleOf(one), by, group, q.status, q.page, PAGE_SIZE);
    return send(reply, page(`Assignments: ${group}, ${q.status}`, viewer, assignmentsBody({ by, group, status: q.status, page: q.page, ...list })));
  });

  server.get('/people/discrepancies', async (request, reply) => {
    const q = queryOf(listQuery.extend({ kind: z.enum(RECONCILIATION_KINDS) }), request, reply, 'People', '/people');
    if (!q) return reply;
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, `People: ${q.kind}`);
    const list = await discrepancies(handleOf(one), q.kind, q.page, PAGE_SIZE);
    return send(reply, page(`People: ${q.kind}`, viewer, discrepanciesBody(q.kind, list.rows, q.page, list.hasMore)));
  });

  server.get('/people/repair', async (request, reply) => {
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'Drift repair: dry run');
    const [result, report, groupNames] = await Promise.all([reconcileFix(deps.repair(one), { dryRun: true, force: false, wait: false }), reconciliationReport(handleOf(one), 0), loadGroupNames(handleOf(one))]);
    return send(reply, page('Drift repair: dry run', viewer, repairBody(viewer, result.plan, result.employees, one, { report, groupNames })));
  });

  server.post('/people/repair', changeHooks, async (request, reply) => {
    const given = orgField.parse(request.body).org;
    if (refuseOutside(request, reply, given)) return reply;
    const org = actingOrg(viewerOf(request, reply).scope, given);
    if (!org) return refuseNoOrg(request, reply, 'Drift repair', '/people/repair');
    const result = await reconcileFix(deps.repair(org), { dryRun: false, force: false, wait: false, starter: { by: 'console', who: viewerOf(request, reply).name } });
    if (result.busy) {
      // The CLI's sentence names commands; the console says the same in its own words.
      const who = (result.busy.holder ?? 'it has only just started').replace('`trainsync reconcile --fix`', 'a repair from the command line');
      return outcomePage(request, reply, 'Drift repair', `Not run: another drift repair of organisation ${org} is running (${who}); this one skipped: nothing was planned, enqueued or changed. Try again once it has finished.`, '/people/repair', false);
    }
    const enqueued = result.applied?.enqueued.length ?? 0;
    if (result.applied) await audit(request, handleOf(org), 'reconcile-fix', 'training.employees', { enqueued, repairs: result.plan.repairs });
    const held = result.heldPlanId === undefined ? '' : ` Held as plan #${result.heldPlanId}: review it under Provisioning, held plans.`;
    const message = result.plan.refused ? `Refused, nothing enqueued: ${consoleWording(result.plan.refused.message)}${held}` : `Repair applied: ${enqueued} actions enqueued (${result.plan.repairs} repairs); the workers apply them.`;
    return outcomePage(request, reply, 'Drift repair', message, '/people/repair', result.plan.refused === undefined);
  });
};
