import { html, type SafeHtml } from '../html.ts';
import { actionButton, orgCell, orgHeader, pager, type Viewer } from '../layout.ts';
import { orgOfRow } from '../scope.ts';
import type { ActionRow, AuditFilter, ConsoleChangeRow, FeedRow, ListPage } from '../data/provisioning.ts';
import { type GroupNames, type HeldPlan, type HeldPlanSummary, NO_GROUP_NAMES } from '../../provisioning/index.ts';
import type { QuarantinedUser } from '../../scim/index.ts';
import { changeTable, groupCell } from './change-table.ts';
import { dayInput, statusBadge, when } from './format.ts';
import { consoleWording } from './console-words.ts';

const ACTION_STATUSES = ['planned', 'queued', 'succeeded', 'failed', 'needs-identity', 'skipped'];

export interface ProvisioningView {
  held: ListPage<HeldPlanSummary>;
  feeds: ListPage<FeedRow>;
  actions: ListPage<ActionRow>;
  filter: AuditFilter;
  changes: ListPage<ConsoleChangeRow>;
  /** The page of each list but the audit trail's (that one is `filter.page`). */
  pages: { held: number; feeds: number; changes: number };
  /** SCIM Users quarantined: the newest few, and how many in all. */
  scimQuarantined?: { rows: QuarantinedUser[]; total: number };
}

/** SCIM Users answered 2xx whose change cannot be planned (docs/scim.md, "Quarantined Users"). */
function scimQuarantineSection(viewer: Viewer, q: { rows: QuarantinedUser[]; total: number } | undefined): SafeHtml {
  if (q === undefined) return html``;
  return html`<section id="scim-quarantine"><h2>SCIM Users quarantined</h2>
${q.total === 0 ? html`<p>None.</p>` : html`<p><strong id="scim-quarantined-count">${q.total}</strong> SCIM Users were answered but their change cannot be planned; a new PUT or PATCH from the identity provider plans each again (<code>trainsync status</code> lists them all).${q.total > q.rows.length ? html` The newest ${q.rows.length} shown.` : ''}</p>
<table id="scim-quarantined"><tr><th>userName</th>${orgHeader(viewer)}<th>employee</th><th>deleted</th><th>since</th><th>reason</th></tr>
${q.rows.map((r) => html`<tr><td>${r.user_name}</td>${orgCell(viewer, r.org)}<td>${r.employee_id}</td><td>${r.deleted ? 'yes' : 'no'}</td><td>${when(r.quarantined_at)}</td><td>${r.reason}</td></tr>`)}</table>`}
</section>`;
}

/** Who decided a plan, and when. */
const decided = (p: HeldPlanSummary): SafeHtml => (p.decidedBy ? html`${p.decidedBy} (${p.decidedRole ?? ''}) ${when(p.decidedAt)}` : html``);

/**
 * What became of a feed read: unreadable (and why) before anything else, since nothing could be
 * planned from it whether or not it was a dry run; then dry run, refused (why) or applied.
 */
export function feedOutcome(x: Pick<FeedRow, 'dry_run' | 'refused'>): SafeHtml {
  const dry = x.dry_run ? ' (dry run)' : '';
  if (x.refused === 'feed-errors' || x.refused?.startsWith('feed-errors: ')) {
    const why = x.refused.slice('feed-errors: '.length) || 'the file could not be read (its errors were not recorded then)';
    return html`<td class="feed-outcome unreadable"><strong>unreadable</strong>${dry}: ${why}</td>`;
  }
  if (x.refused) return html`<td class="feed-outcome">refused${dry}: ${x.refused}</td>`;
  return html`<td class="feed-outcome">${x.dry_run ? 'dry run: nothing applied' : 'applied'}</td>`;
}

export function provisioningBody(viewer: Viewer, d: ProvisioningView): SafeHtml {
  const f = d.filter;
  // Every list's pager keeps the filters and the other lists' pages.
  const keep = { who: f.who, day: f.day, status: f.status, feed: f.feed, page: f.page > 1 ? f.page : undefined, hpage: d.pages.held > 1 ? d.pages.held : undefined, fpage: d.pages.feeds > 1 ? d.pages.feeds : undefined, cpage: d.pages.changes > 1 ? d.pages.changes : undefined };
  return html`${scimQuarantineSection(viewer, d.scimQuarantined)}
<section id="plans"><h2>Plans held by the disable limit</h2>
${d.held.rows.length === 0 && d.pages.held === 1 ? html`<p>None.</p>` : html`<table id="held-plans"><tr><th>plan</th>${orgHeader(viewer)}<th>source</th><th>from</th><th>lose access</th><th>actions</th><th>status</th><th>decided</th><th>held</th></tr>
${d.held.rows.map((p) => html`<tr><td><a href="/provisioning/held/${p.id}">#${p.id}</a></td>${orgCell(viewer, orgOfRow(p))}<td>${p.source}</td><td>${p.file}</td><td><a href="/provisioning/held/${p.id}#affected">${p.disables}</a></td><td><a href="/provisioning/held/${p.id}#actions">${p.actionCount}</a></td><td>${statusBadge(p.status)}</td><td>${decided(p)}</td><td>${when(p.createdAt)}</td></tr>`)}</table>
${pager('/provisioning', d.pages.held, d.held.hasMore, keep, 'hpage', 'plans')}`}
</section>
<section id="feeds-read"><h2>Feeds read</h2>
<table id="feeds"><tr><th>#</th>${orgHeader(viewer)}<th>file</th><th>mode</th><th>rows</th><th>row errors</th><th>actions</th><th>outcome</th><th>read</th></tr>
${d.feeds.rows.map((x) => html`<tr><td>${x.id}</td>${orgCell(viewer, x.org)}<td>${x.path}</td><td>${x.mode}</td><td>${x.rows}</td><td>${x.errors}</td><td>${x.actions > 0 && !x.dry_run && !x.refused ? html`<a href="/provisioning?feed=${x.hash}#audit" id="feed-actions-${x.id}">${x.actions}</a>` : x.actions}</td>${feedOutcome(x)}<td>${when(x.created_at)}</td></tr>`)}</table>
${pager('/provisioning', d.pages.feeds, d.feeds.hasMore, keep, 'fpage', 'feeds-read')}
</section>
<section id="audit"><h2>Audit trail</h2>
<form method="get" action="/provisioning#audit" class="filters">
<label>employee or e-mail <input name="who" value="${f.who ?? ''}"></label>
${dayInput(f.day, 'day (UTC)')}
<label>status <select name="status"><option value="">all</option>${ACTION_STATUSES.map((s) => html`<option value="${s}" ${s === f.status ? html`selected` : ''}>${s}</option>`)}</select></label>
${f.feed ? html`<input type="hidden" name="feed" value="${f.feed}">` : ''}${(['hpage', 'fpage', 'cpage'] as const).map((k) => (keep[k] ? html`<input type="hidden" name="${k}" value="${keep[k]}">` : ''))}<button type="submit">Search</button></form>
<table id="actions"><tr>${orgHeader(viewer)}<th>updated</th><th>employee</th><th>e-mail</th><th>action</th><th>before &rarr; after</th><th>status</th><th>attempts</th><th>error</th><th></th></tr>
${d.actions.rows.map((a) => html`<tr>${orgCell(viewer, a.org)}<td>${when(a.updated_at)}</td><td>${a.employee_id}</td><td>${a.email}</td><td>${a.kind}${a.group_id ? html` <small>${groupCell(a.group_id, a.group_name)}</small>` : ''}</td><td>${changeTable(a.before, a.after)}</td><td>${statusBadge(a.status)}</td><td>${a.attempts}</td><td>${a.error_code ?? ''} ${a.error_message ?? ''}</td>
<td>${a.status === 'failed' ? actionButton(viewer, `/provisioning/actions/${encodeURIComponent(a.action_id)}/retry`, 'Retry', `retry-${a.employee_id}-${a.kind}`, a.org) : ''}</td></tr>`)}
</table>
${f.feed ? html`<p id="feed-filter">Actions of feed <code>${f.feed.slice(0, 12)}&hellip;</code> only. <a href="/provisioning#audit">Show all</a></p>` : ''}
${pager('/provisioning', f.page, d.actions.hasMore, keep, 'page', 'audit')}
</section>
<section id="console-changes"><h2>Changes made in the console</h2>
<table id="console-audit"><tr>${orgHeader(viewer)}<th>when</th><th>user</th><th>role</th><th>change</th><th>target</th></tr>${d.changes.rows.map((c) => html`<tr>${orgCell(viewer, c.org ?? 'all')}<td>${when(c.at)}</td><td>${c.username}</td><td>${c.role}</td><td>${c.action}</td><td>${c.target}</td></tr>`)}</table>
${pager('/provisioning', d.pages.changes, d.changes.hasMore, keep, 'cpage', 'console-changes')}
</section>`;
}

/** How many people the page names at the top; the table below lists everyone. */
export const FIRST_PEOPLE = 10;

/** Why it was held, in numbers, as the plan's source read them. */
function whyHeld(plan: HeldPlan): SafeHtml {
  const read = plan.rowsRead === null
    ? ''
    : plan.source === 'feed'
      ? html` The feed <strong>${plan.file}</strong> has <strong id="rows-read">${plan.rowsRead}</strong> valid rows.`
      : plan.source === 'scim'
        ? html` <strong id="rows-read">${plan.rowsRead}</strong> SCIM changes were read.`
        : html` <strong id="rows-read">${plan.rowsRead}</strong> employees of ${plan.file} were planned.`;
  const active = plan.activeEmployees === null ? '' : html` The organisation has <strong id="active-employees">${plan.activeEmployees}</strong> active employees.`;
  return html`<p class="why" id="why">Held by the disable limit: <strong id="lose-access">${plan.disables}</strong> people would lose access.${active}${read}</p>`;
}

/** The approve form: the operator types the number of people who will lose access; the server checks it again. */
function approveForm(viewer: Viewer, plan: HeldPlan): SafeHtml {
  if (viewer.role !== 'operator') return html``;
  const confirm = plan.disables > 0
    ? html`<label>Type the number of people who will lose access <input name="confirm" id="confirm" inputmode="numeric" pattern="[0-9]*" autocomplete="off" required size="6"></label> `
    : '';
  return html`<form method="post" action="/provisioning/held/${plan.id}/approve" class="inline" id="approve-form"><input type="hidden" name="_csrf" value="${viewer.csrfToken}">${confirm}<button type="submit" id="approve">Approve: apply all ${plan.actions.length} actions</button></form>`;
}

function rejectForm(viewer: Viewer, plan: HeldPlan): SafeHtml {
  if (viewer.role !== 'operator') return html``;
  return html`<form method="post" action="/provisioning/held/${plan.id}/reject" class="inline" id="reject-form"><input type="hidden" name="_csrf" value="${viewer.csrfToken}"><label>reason <input name="reason" id="reject-reason" maxlength="200" size="24"></label> <button type="submit" id="reject">Reject: change nothing</button></form>`;
}

/** `org`: the plan's organisation (approve and reject act in it). */
export function heldPlanBody(viewer: Viewer, plan: HeldPlan, org: string, groupNames: GroupNames = NO_GROUP_NAMES): SafeHtml {
  const losing = plan.people.filter((p) => p.kinds.includes('disable'));
  return html`
${whyHeld(plan)}
<p>${viewer.scope.multi ? html`Organisation <strong id="plan-org">${org}</strong>. ` : ''}${statusBadge(plan.status)} Source <strong id="plan-source">${plan.source}</strong>: <strong>${plan.file}</strong> (${plan.mode}), held ${when(plan.createdAt)}. ${plan.decidedBy ? html`Decided by ${plan.decidedBy} (${plan.decidedRole ?? ''}) at ${when(plan.decidedAt)}${plan.decidedNote ? html`: ${plan.decidedNote}` : ''}.` : ''}</p>
<p class="reason" id="held-message">${consoleWording(plan.message)}</p>
${plan.status === 'held' ? html`<p id="next-step">Nothing has been applied. Check the people below first: a feed cut short, a wrong column mapping, or a full feed that lists only changes all look like mass leavers. If the plan is right, an operator types the number of people who lose access and approves it; otherwise rejects it, and nothing changes.</p>` : ''}
<h2>${losing.length} people would lose access</h2>
<table id="losing"><tr><th>employee</th><th>e-mail</th><th>department</th></tr>
${losing.slice(0, FIRST_PEOPLE).map((p) => html`<tr><td>${p.employeeId}</td><td>${p.email}</td><td>${p.department ?? ''}</td></tr>`)}</table>
${losing.length > FIRST_PEOPLE ? html`<p><a href="#affected">and ${losing.length - FIRST_PEOPLE} more</a></p>` : ''}
${plan.status === 'held' ? html`<p class="decide">${approveForm(viewer, plan)} ${rejectForm(viewer, plan)}
${viewer.role === 'operator' ? '' : html`<em>Only an operator can approve or reject.</em>`}</p>` : ''}
<h2>Everyone the plan changes</h2>
<table id="affected"><tr><th>employee</th><th>e-mail</th><th>department</th><th>changes</th></tr>
${plan.people.map((p) => html`<tr><td>${p.employeeId}</td><td>${p.email}</td><td>${p.department ?? ''}</td><td>${p.kinds.join(', ')}</td></tr>`)}</table>
<h2>Actions</h2>
<table id="actions"><tr><th>employee</th><th>action</th><th>before &rarr; after</th></tr>
${plan.actions.map((a) => html`<tr><td>${a.employeeId}</td><td>${a.kind}${a.groupId ? html` <small>${groupCell(a.groupId, groupNames.get(a.groupId.toLowerCase()))}</small>` : ''}</td><td>${changeTable(a.before, a.repair === undefined ? a.after : { ...a.after, repair: a.repair })}</td></tr>`)}</table>`;
}
