import type { OrgScope } from '../warehouse/scope.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { approveHeldPlan, getHeldPlan, type HeldPlan, type HeldPlanSummary, listHeldPlans, loadGroupNames, reconcileFix, rejectHeldPlan, retryFailedAction } from '../provisioning/index.ts';
import { repairBody } from './pages/repair.ts';
import { consoleWording } from './pages/console-words.ts';
import { RECONCILIATION_KINDS, reconciliationReport } from '../warehouse/reconciliation.ts';
import { cancelQueuedOrOrphaned, cancellableSyncs } from '../sync/index.ts';
import { recentRefusals, webhookBacklog } from '../webhooks/index.ts';
import { assignmentsIn, assignmentStatusBy, discrepancies, parseGroupBy } from './data/people.ts';
import { discrepanciesBody } from './pages/discrepancies.ts';
import { consoleChanges, recordConsoleChange, recentFeeds, searchActions, attentionCount } from './data/provisioning.ts';
import { getRun, latestRuns, listRuns, resourcesWithRuns, runQuarantine, runSeries, runUnfinishedWindows } from './data/runs.ts';
import { recentEvents } from './data/webhooks.ts';
import { html, type SafeHtml } from './html.ts';
import { redirectWithFlash } from './flash.ts';
import { page, type Viewer } from './layout.ts';
import { actingOrg, orgOfRow, outsideOrg, scheduleOrg } from './scope.ts';
import { assignmentsBody } from './pages/assignments.ts';
import { heldPlanBody, provisioningBody } from './pages/provisioning.ts';
import { quarantinedUsersOf } from '../scim/index.ts';
import { overviewBody } from './pages/overview.ts';
import { peopleBody } from './pages/people.ts';
import { runBody, runsBody } from './pages/runs.ts';
import { webhooksBody } from './pages/webhooks.ts';
import type { ConsoleDeps } from './deps.ts';

const PAGE_SIZE = 50;
/** The Provisioning page holds four lists: each paged short, so the page stays readable (its own page parameter each). */
export const PROVISIONING_PAGE_SIZE = 20;
const pageNumber = z.coerce.number().int().min(1).max(100_000).catch(1);
const text = z.string().trim().max(200).optional().transform((v) => (v ? v : undefined));
const listQuery = z.object({
  page: pageNumber,
  rpage: pageNumber,
  /** The Provisioning page's other lists: held plans, feeds, console changes. */
  hpage: pageNumber,
  fpage: pageNumber,
  cpage: pageNumber,
  resource: text,
  status: text,
  who: text,
  /** Checked on its own (dayOf): a bad day is answered 400 with why, never silently dropped. */
  day: z.unknown().optional(),
  outcome: text,
  by: text,
  group: z.string().max(300).optional(),
  feed: z.string().regex(/^[0-9a-f]{64}$/).optional().catch(undefined),
});
/** A change's form may name the organisation of the row it acts on. */
const orgField = z.object({ org: z.string().max(40).optional() }).catch({});
const idParam = z.object({ id: z.coerce.number().int().positive() });
/** A decision's form: the typed count of people who will lose access (approve), a reason (reject). */
const decisionFields = z
  .object({ confirm: z.string().max(20).optional(), reason: z.string().trim().max(200).optional().transform((v) => (v ? v : undefined)) })
  .catch({ confirm: undefined, reason: undefined });

/**
 * A day filter's value: empty means none; otherwise a real calendar day as YYYY-MM-DD
 * (what the field shows whatever the browser's locale), or why not, for a 400 page.
 */
export function dayOf(raw: unknown): { ok: true; day: string | undefined } | { ok: false; message: string } {
  if (raw === undefined || raw === '') return { ok: true, day: undefined };
  const shown = typeof raw === 'string' ? raw.slice(0, 40) : undefined;
  const text = typeof raw === 'string' ? raw.trim() : undefined;
  const match = text === undefined ? null : /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (text !== undefined && match) {
    const [year, month, date] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const at = new Date(Date.UTC(year, month - 1, date));
    if (year >= 1900 && at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === date) return { ok: true, day: text };
  }
  return {
    ok: false,
    message: shown === undefined
      ? 'The day filter was given more than once: give one day, as YYYY-MM-DD (for example 2026-12-07).'
      : `The day filter "${shown}" is not a day: write it as YYYY-MM-DD (for example 2026-12-07), a real date from 1900 on, in UTC.`,
  };
}

type ViewerOf = (request: FastifyRequest, reply: FastifyReply) => Viewer;

function send(reply: FastifyReply, body: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.text);
}

/** Every page and change of the console; the login hook in server.ts has run before any of them. */
export function registerPageRoutes(server: FastifyInstance, deps: ConsoleDeps, viewerOf: ViewerOf): void {
  // Every query reaches its rows through the scoped handle of the organisations it names:
  // Postgres shows it those organisations' rows and no other (src/warehouse/scope.ts).
  const dbOf = (orgs: string | readonly string[]): OrgScope['db'] => deps.scopes.scope(orgs).db;
  /** The deps of a change in one organisation: its scoped handle in place of any other. */
  const inOrg = (org: string): ConsoleDeps & { org: string; db: OrgScope['db']; withPgClient: OrgScope['lend'] } => {
    const scope = deps.scopes.scope(org);
    return { ...deps, org, db: scope.db, withPgClient: scope.lend };
  };
  /** Changes: operators only (the server decides, whatever the page showed), and every one is audited. */
  const operator = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (request.session?.role === 'operator') return undefined;
    deps.log.warn({ user: request.session?.username, url: request.url }, 'console change refused: not an operator');
    return reply.code(403).type('text/plain').send('operators only: your role is viewer');
  };
  // The token is in the form body, so it is checked once the body is parsed; then the role.
  const changeHooks = { preHandler: [server.csrfProtection, operator] };
  const audit = (request: FastifyRequest, org: string, action: string, target: string, detail: Record<string, unknown> = {}): Promise<void> =>
    recordConsoleChange(dbOf(org), { org, username: request.session!.username, role: request.session!.role, action, target, detail });
  /** The page's scope, and the one organisation it must show for a per-organisation page (undefined when "all" of several is chosen). */
  const scopeOf = (request: FastifyRequest, reply: FastifyReply): { viewer: Viewer; slugs: string[]; one: string | undefined } => {
    const viewer = viewerOf(request, reply);
    return { viewer, slugs: viewer.scope.slugs, one: viewer.scope.org };
  };
  /**
   * What is not in the organisations the user may see answers 404 as what does not exist:
   * a user limited to some learns nothing of the others (not even that an id is taken).
   */
  const notFound = (reply: FastifyReply, what: string): FastifyReply => reply.code(404).type('text/plain').send(`no ${what} in the organisations shown`);
  /** A change's form naming an organisation the (limited) user may not see: logged, answered 404, nothing done. */
  const refuseOutside = (request: FastifyRequest, reply: FastifyReply, org: string | undefined): FastifyReply | undefined => {
    if (!outsideOrg(viewerOf(request, reply).scope, org)) return undefined;
    deps.log.warn({ user: request.session?.username, url: request.url, org }, 'console change refused: another organisation');
    return notFound(reply, 'such organisation');
  };
  /** A page that works on one organisation at a time (reconciliation, drift repair): asks for one when "all" of several is chosen. */
  const chooseOne = (reply: FastifyReply, viewer: Viewer, title: string): FastifyReply =>
    send(reply, page(title, viewer, html`<p id="choose-org">This page works on one organisation at a time: choose one with the selector above.</p>`));

  /** A filter the page cannot use: 400, the reason, and the page without its filters. */
  const badFilter = (request: FastifyRequest, reply: FastifyReply, title: string, message: string, back: string): FastifyReply =>
    send(reply.code(400), page(title, viewerOf(request, reply), html`<p class="error" id="bad-filter">${message}</p><p><a href="${back}">Show ${title} without filters</a></p>`));

  /**
   * The page's query, or (answered 400 with the fields and why) undefined: a filter given twice,
   * or too long, is the request's mistake, never a fault and never silently dropped.
   */
  const queryOf = <T extends z.ZodType>(schema: T, request: FastifyRequest, reply: FastifyReply, title: string, back: string): z.infer<T> | undefined => {
    const parsed = schema.safeParse(request.query);
    if (parsed.success) return parsed.data;
    const fields = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? 'query')))].map((f) => `"${f.slice(0, 40)}"`).join(', ');
    badFilter(request, reply, title, `The filter ${fields} cannot be used: give each filter once, as the page's form does (text of at most 200 characters).`, back);
    return undefined;
  };

  server.get('/', async (request, reply) => {
    const { viewer, slugs } = scopeOf(request, reply);
    const [runs, schedules, health, held, attention, attentionTotal, cancellable] = await Promise.all([
      latestRuns(dbOf(slugs), slugs),
      deps.queue.schedules().catch(() => []),
      deps.health(),
      Promise.all(slugs.map((org) => listHeldPlans(dbOf(org), { org, onlyHeld: true }))).then(mergeHeld),
      searchActions(dbOf(slugs), slugs, { status: 'failed', page: 1, pageSize: 10 }),
      attentionCount(dbOf(slugs), slugs),
      Promise.all(slugs.map(async (org) => [...(await cancellableSyncs(deps.queue, org).catch(() => new Map()))].map(([resource, job]) => ({ org, resource, job })))).then((lists) => lists.flat()),
    ]);
    const pending = cancellable.map(({ org, resource, job }) => ({ org, resource, jobId: job.id, state: job.holder?.orphaned ? `orphaned (worker ${job.holder.worker ?? 'unknown'} is gone)` : job.state }));
    const ownSchedules = schedules.filter((s) => slugs.includes(scheduleOrg(s.id)));
    return send(reply, page('Overview', viewer, overviewBody({ viewer, runs, schedules: ownSchedules, health, held, attention: attention.rows, attentionTotal, pending, now: new Date() })));
  });

  server.get('/runs', async (request, reply) => {
    // The day first: a bad one is answered with why, whatever else the query holds.
    const day = dayOf(z.object({ day: z.unknown() }).catch({ day: undefined }).parse(request.query).day);
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
    const [quarantined, windows] = await Promise.all([runQuarantine(dbOf(run.org), run.org, id), runUnfinishedWindows(dbOf(run.org), run.org, id)]);
    return send(reply, page(`Run #${id}`, viewer, runBody(viewer, run, quarantined, windows)));
  });

  /** One page of the held plans of `slugs`, newest first (ids are global: one order across organisations). */
  const heldPlansPage = async (slugs: readonly string[], pageNo: number, size: number): Promise<{ rows: HeldPlanSummary[]; hasMore: boolean }> => {
    const offset = (pageNo - 1) * size;
    // Each organisation's first offset + size + 1, merged: the page and whether one follows.
    const lists = await Promise.all(slugs.map((org) => listHeldPlans(dbOf(org), { org, limit: offset + size + 1 })));
    const merged = [...new Map(lists.flat().map((p) => [p.id, p])).values()].sort((a, b) => b.id - a.id).slice(offset, offset + size + 1);
    return { rows: merged.slice(0, size), hasMore: merged.length > size };
  };

  server.get('/provisioning', async (request, reply) => {
    // The day first: a bad one is answered with why, whatever else the query holds.
    const day = dayOf(z.object({ day: z.unknown() }).catch({ day: undefined }).parse(request.query).day);
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
    return send(reply, page(`Held plan #${id}`, viewer, heldPlanBody(viewer, found.plan, found.org, await loadGroupNames(dbOf(found.org), found.org))));
  });

  const outcomePage = (request: FastifyRequest, reply: FastifyReply, title: string, message: string, back: string, ok: boolean): FastifyReply =>
    send(reply.code(ok ? 200 : 409), page(title, viewerOf(request, reply), html`<p class="${ok ? 'ok' : 'error'}" id="outcome">${message}</p><p><a href="${back}">Back</a></p>`));
  const refuseNoOrg = (request: FastifyRequest, reply: FastifyReply, title: string, back: string): FastifyReply =>
    send(reply.code(400), page(title, viewerOf(request, reply), html`<p class="error" id="outcome">Which organisation? Choose one with the selector above, or use the button on the row.</p><p><a href="${back}">Back</a></p>`));

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
    if (result.ok) await audit(request, found.org, 'approve-held-plan', `plan #${id}`, { enqueued: result.enqueued.length, confirmed: Number(confirm), source: found.plan.source });
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
    if (result.ok) await audit(request, found.org, 'reject-held-plan', `plan #${id}`, reason ? { reason } : {});
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
    if (result.ok) await audit(request, org, 'retry-action', actionId);
    return outcomePage(request, reply, 'Retry', result.ok ? `Action enqueued again: ${actionId}` : result.reason, '/provisioning?status=failed', result.ok);
  });

  server.post('/sync/:resource/cancel', changeHooks, async (request, reply) => {
    const resource = z.object({ resource: z.string().regex(/^[a-z-]{1,40}$/) }).parse(request.params).resource;
    const given = orgField.parse(request.body).org;
    if (refuseOutside(request, reply, given)) return reply;
    const org = actingOrg(viewerOf(request, reply).scope, given);
    if (!org) return refuseNoOrg(request, reply, 'Cancel', '/');
    const { username, role } = request.session!;
    const result = await cancelQueuedOrOrphaned(inOrg(org), resource, `${username} (${role}) in the console`);
    if (result.ok) await audit(request, org, 'cancel-sync', resource, { job: result.job.id, how: result.how, runs: result.runs });
    const message = result.ok ? `Cancelled job ${result.job.id} (${result.job.name}, ${result.how})${result.runs > 0 ? '; its run recorded as cancelled' : ''}.` : result.reason;
    return outcomePage(request, reply, 'Cancel', message, '/', result.ok);
  });

  server.get('/people', async (request, reply) => {
    const by = parseGroupBy(listQuery.parse(request.query).by);
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'People');
    const [report, statuses] = await Promise.all([reconciliationReport(dbOf(one), one, 5), assignmentStatusBy(dbOf(one), one, by)]);
    return send(reply, page('People', viewer, peopleBody(report, by, statuses)));
  });

  server.get('/people/assignments', async (request, reply) => {
    const q = listQuery.extend({ status: z.string().max(40) }).parse(request.query);
    const by = parseGroupBy(q.by);
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'Assignments');
    const group = q.group ?? '';
    const list = await assignmentsIn(dbOf(one), one, by, group, q.status, q.page, PAGE_SIZE);
    return send(reply, page(`Assignments: ${group}, ${q.status}`, viewer, assignmentsBody({ by, group, status: q.status, page: q.page, ...list })));
  });

  server.get('/people/discrepancies', async (request, reply) => {
    const q = listQuery.extend({ kind: z.enum(RECONCILIATION_KINDS) }).parse(request.query);
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, `People: ${q.kind}`);
    const list = await discrepancies(dbOf(one), one, q.kind, q.page, PAGE_SIZE);
    return send(reply, page(`People: ${q.kind}`, viewer, discrepanciesBody(q.kind, list.rows, q.page, list.hasMore)));
  });

  server.get('/people/repair', async (request, reply) => {
    const { viewer, one } = scopeOf(request, reply);
    if (!one) return chooseOne(reply, viewer, 'Drift repair: dry run');
    const [result, report, groupNames] = await Promise.all([reconcileFix(deps.repair(one), { dryRun: true, force: false, wait: false }), reconciliationReport(dbOf(one), one, 0), loadGroupNames(dbOf(one), one)]);
    return send(reply, page('Drift repair: dry run', viewer, repairBody(viewer, result.plan, result.employees, one, { report, groupNames })));
  });

  server.post('/people/repair', changeHooks, async (request, reply) => {
    const given = orgField.parse(request.body).org;
    if (refuseOutside(request, reply, given)) return reply;
    const org = actingOrg(viewerOf(request, reply).scope, given);
    if (!org) return refuseNoOrg(request, reply, 'Drift repair', '/people/repair');
    const result = await reconcileFix(deps.repair(org), { dryRun: false, force: false, wait: false });
    const enqueued = result.applied?.enqueued.length ?? 0;
    if (result.applied) await audit(request, org, 'reconcile-fix', 'training.employees', { enqueued, repairs: result.plan.repairs });
    const held = result.heldPlanId === undefined ? '' : ` Held as plan #${result.heldPlanId}: review it under Provisioning, held plans.`;
    const message = result.plan.refused ? `Refused, nothing enqueued: ${consoleWording(result.plan.refused.message)}${held}` : `Repair applied: ${enqueued} actions enqueued (${result.plan.repairs} repairs); the workers apply them.`;
    return outcomePage(request, reply, 'Drift repair', message, '/people/repair', result.plan.refused === undefined);
  });

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
}

/** Several organisations' lists of held plans as one, newest first, each plan once. */
function mergeHeld(lists: HeldPlanSummary[][]): HeldPlanSummary[] {
  return [...new Map(lists.flat().map((p) => [p.id, p])).values()].sort((a, b) => b.id - a.id).slice(0, 50);
}
