import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_ORG } from '../lib/orgs-file.ts';
import { z } from 'zod';
import { approveHeldPlan, rejectHeldPlan } from '../provisioning/approve-held-plan.ts';
import { getHeldPlan, listHeldPlans } from '../provisioning/held-plans.ts';
import { retryFailedAction } from '../provisioning/retry-action.ts';
import { reconcileFix } from '../provisioning/reconcile-fix.ts';
import { repairBody } from './pages/repair.ts';
import { RECONCILIATION_KINDS, reconciliationReport } from '../warehouse/reconciliation.ts';
import { cancelQueuedOrOrphaned, cancellableSyncs } from '../sync/cancel-sync.ts';
import { recentRefusals } from '../webhooks/refusals.ts';
import { webhookBacklog } from '../webhooks/store.ts';
import { assignmentStatusBy, discrepancies, parseGroupBy } from './data/people.ts';
import { discrepanciesBody } from './pages/discrepancies.ts';
import { consoleChanges, recordConsoleChange, recentFeeds, searchActions, attentionCount } from './data/provisioning.ts';
import { getRun, latestRuns, listRuns, resourcesWithRuns, runQuarantine, runSeries, runUnfinishedWindows } from './data/runs.ts';
import { recentEvents } from './data/webhooks.ts';
import { html, type SafeHtml } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { heldPlanBody, provisioningBody } from './pages/provisioning.ts';
import { overviewBody } from './pages/overview.ts';
import { peopleBody } from './pages/people.ts';
import { runBody, runsBody } from './pages/runs.ts';
import { webhooksBody } from './pages/webhooks.ts';
import type { ConsoleDeps } from './server.ts';

const PAGE_SIZE = 50;
const text = z.string().trim().max(200).optional().transform((v) => (v ? v : undefined));
const listQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).catch(1),
  rpage: z.coerce.number().int().min(1).max(100_000).catch(1),
  resource: text,
  status: text,
  who: text,
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).optional().catch(undefined),
  outcome: text,
  by: text,
});
const idParam = z.object({ id: z.coerce.number().int().positive() });

type ViewerOf = (request: FastifyRequest, reply: FastifyReply) => Viewer;

function send(reply: FastifyReply, body: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.text);
}

/** Every page and change of the console; the login hook in server.ts has run before any of them. */
export function registerPageRoutes(server: FastifyInstance, deps: ConsoleDeps, viewerOf: ViewerOf): void {
  const { db } = deps;
  /** Changes: operators only (the server decides, whatever the page showed), and every one is audited. */
  const operator = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (request.session?.role === 'operator') return undefined;
    deps.log.warn({ user: request.session?.username, url: request.url }, 'console change refused: not an operator');
    return reply.code(403).type('text/plain').send('operators only: your role is viewer');
  };
  // The token is in the form body, so it is checked once the body is parsed; then the role.
  const changeHooks = { preHandler: [server.csrfProtection, operator] };
  const audit = (request: FastifyRequest, action: string, target: string, detail: Record<string, unknown> = {}): Promise<void> =>
    recordConsoleChange(db, { username: request.session!.username, role: request.session!.role, action, target, detail });

  server.get('/', async (request, reply) => {
    const [runs, schedules, health, held, attention, attentionTotal, cancellable] = await Promise.all([
      latestRuns(db),
      deps.queue.schedules().catch(() => []),
      deps.health(),
      listHeldPlans(db, { onlyHeld: true }),
      searchActions(db, { status: 'failed', page: 1, pageSize: 10 }),
      attentionCount(db),
      cancellableSyncs(deps.queue, DEFAULT_ORG).catch(() => new Map()),
    ]);
    const viewer = viewerOf(request, reply);
    const pending = [...cancellable].map(([resource, job]) => ({ resource, jobId: job.id, state: job.holder?.orphaned ? `orphaned (worker ${job.holder.worker ?? 'unknown'} is gone)` : job.state }));
    return send(reply, page('Overview', viewer, overviewBody({ viewer, runs, schedules, health, held, attention: attention.rows, attentionTotal, pending })));
  });

  server.get('/runs', async (request, reply) => {
    const q = listQuery.parse(request.query);
    const [list, resources, series] = await Promise.all([
      listRuns(db, { resource: q.resource, status: q.status, page: q.page, pageSize: PAGE_SIZE }),
      resourcesWithRuns(db),
      q.resource ? runSeries(db, q.resource) : Promise.resolve(undefined),
    ]);
    return send(reply, page('Runs', viewerOf(request, reply), runsBody({ ...list, page: q.page, resources, resource: q.resource, status: q.status, series }), { chart: series !== undefined }));
  });

  server.get('/runs/:id', async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const run = await getRun(db, id);
    if (!run) return reply.code(404).type('text/plain').send(`no run #${id}`);
    const [quarantined, windows] = await Promise.all([runQuarantine(db, id), runUnfinishedWindows(db, id)]);
    return send(reply, page(`Run #${id}`, viewerOf(request, reply), runBody(run, quarantined, windows)));
  });

  server.get('/provisioning', async (request, reply) => {
    const q = listQuery.parse(request.query);
    const filter = { who: q.who, day: q.day, status: q.status, page: q.page, pageSize: PAGE_SIZE };
    const [held, feeds, actions, changes] = await Promise.all([listHeldPlans(db), recentFeeds(db), searchActions(db, filter), consoleChanges(db)]);
    const viewer = viewerOf(request, reply);
    return send(reply, page('Provisioning', viewer, provisioningBody(viewer, { held, feeds, actions: actions.rows, hasMore: actions.hasMore, filter, changes })));
  });

  server.get('/provisioning/held/:id', async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const plan = await getHeldPlan(db, id);
    if (!plan) return reply.code(404).type('text/plain').send(`no held plan #${id}`);
    const viewer = viewerOf(request, reply);
    return send(reply, page(`Held plan #${id}`, viewer, heldPlanBody(viewer, plan)));
  });

  const outcomePage = (request: FastifyRequest, reply: FastifyReply, title: string, message: string, back: string, ok: boolean): FastifyReply =>
    send(reply.code(ok ? 200 : 409), page(title, viewerOf(request, reply), html`<p class="${ok ? 'ok' : 'error'}" id="outcome">${message}</p><p><a href="${back}">Back</a></p>`));

  server.post('/provisioning/held/:id/approve', changeHooks, async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const decider = { by: request.session!.username, role: request.session!.role };
    const result = await approveHeldPlan({ ...deps, org: DEFAULT_ORG }, id, decider);
    if (result.ok) await audit(request, 'approve-held-plan', `plan #${id}`, { enqueued: result.enqueued?.enqueued.length ?? 0 });
    const message = result.ok ? `Plan #${id} approved: ${result.enqueued?.enqueued.length ?? 0} actions enqueued; the workers apply them (see the audit trail).` : result.reason;
    return outcomePage(request, reply, `Plan #${id}`, message, `/provisioning/held/${id}`, result.ok);
  });

  server.post('/provisioning/held/:id/reject', changeHooks, async (request, reply) => {
    const { id } = idParam.parse(request.params);
    const result = await rejectHeldPlan({ ...deps, org: DEFAULT_ORG }, id, { by: request.session!.username, role: request.session!.role });
    if (result.ok) await audit(request, 'reject-held-plan', `plan #${id}`);
    return outcomePage(request, reply, `Plan #${id}`, result.ok ? `Plan #${id} rejected: nothing was enqueued.` : result.reason, `/provisioning/held/${id}`, result.ok);
  });

  server.post('/provisioning/actions/:actionId/retry', changeHooks, async (request, reply) => {
    const actionId = z.object({ actionId: z.string().min(1).max(300) }).parse(request.params).actionId;
    const result = await retryFailedAction({ ...deps, org: DEFAULT_ORG }, actionId);
    if (result.ok) await audit(request, 'retry-action', actionId);
    return outcomePage(request, reply, 'Retry', result.ok ? `Action enqueued again: ${actionId}` : result.reason, '/provisioning?status=failed', result.ok);
  });

  server.post('/sync/:resource/cancel', changeHooks, async (request, reply) => {
    const resource = z.object({ resource: z.string().regex(/^[a-z-]{1,40}$/) }).parse(request.params).resource;
    const { username, role } = request.session!;
    const result = await cancelQueuedOrOrphaned({ ...deps, org: DEFAULT_ORG }, resource, `${username} (${role}) in the console`);
    if (result.ok) await audit(request, 'cancel-sync', resource, { job: result.job.id, how: result.how, runs: result.runs });
    const message = result.ok ? `Cancelled job ${result.job.id} (${result.job.name}, ${result.how})${result.runs > 0 ? '; its run recorded as cancelled' : ''}.` : result.reason;
    return outcomePage(request, reply, 'Cancel', message, '/', result.ok);
  });

  server.get('/people', async (request, reply) => {
    const by = parseGroupBy(listQuery.parse(request.query).by);
    const [report, statuses] = await Promise.all([reconciliationReport(db, 5), assignmentStatusBy(db, by)]);
    return send(reply, page('People', viewerOf(request, reply), peopleBody(report, by, statuses), { chart: true }));
  });

  server.get('/people/discrepancies', async (request, reply) => {
    const q = listQuery.extend({ kind: z.enum(RECONCILIATION_KINDS) }).parse(request.query);
    const list = await discrepancies(db, q.kind, q.page, PAGE_SIZE);
    return send(reply, page(`People: ${q.kind}`, viewerOf(request, reply), discrepanciesBody(q.kind, list.rows, q.page, list.hasMore)));
  });

  server.get('/people/repair', async (request, reply) => {
    const result = await reconcileFix(deps.repair(), { dryRun: true, force: false, wait: false });
    const viewer = viewerOf(request, reply);
    return send(reply, page('Drift repair: dry run', viewer, repairBody(viewer, result.plan, result.employees)));
  });

  server.post('/people/repair', changeHooks, async (request, reply) => {
    const result = await reconcileFix(deps.repair(), { dryRun: false, force: false, wait: false });
    const enqueued = result.applied?.enqueued.length ?? 0;
    if (result.applied) await audit(request, 'reconcile-fix', 'training.employees', { enqueued, repairs: result.plan.repairs });
    const message = result.plan.refused ? `Refused, nothing enqueued: ${result.plan.refused.message}` : `Repair applied: ${enqueued} actions enqueued (${result.plan.repairs} repairs); the workers apply them.`;
    return outcomePage(request, reply, 'Drift repair', message, '/people/repair', result.plan.refused === undefined);
  });

  server.get('/webhooks', async (request, reply) => {
    const q = listQuery.parse(request.query);
    const [backlog, events, refusals] = await Promise.all([
      webhookBacklog(db, undefined),
      recentEvents(db, { outcome: q.outcome, page: q.page, pageSize: PAGE_SIZE }),
      recentRefusals(db, undefined, { page: q.rpage, pageSize: PAGE_SIZE }),
    ]);
    return send(reply, page('Webhooks', viewerOf(request, reply), webhooksBody(backlog, events.rows, events.hasMore, q.page, q.outcome, { ...refusals, page: q.rpage })));
  });
}
