import { html, type SafeHtml } from '../html.ts';
import { actionButton, orgCell, orgHeader, pager, type Viewer } from '../layout.ts';
import { orgOfRow } from '../scope.ts';
import type { ActionRow, AuditFilter, FeedRow } from '../data/provisioning.ts';
import type { HeldPlan, HeldPlanSummary } from '../../provisioning/held-plans.ts';
import { statusBadge } from './format.ts';

const ACTION_STATUSES = ['planned', 'queued', 'succeeded', 'failed', 'needs-identity', 'skipped'];

export function provisioningBody(
  viewer: Viewer,
  d: { held: HeldPlanSummary[]; feeds: FeedRow[]; actions: ActionRow[]; hasMore: boolean; filter: AuditFilter; changes: Array<{ org: string | null; username: string; role: string; action: string; target: string; at: Date }> },
): SafeHtml {
  const f = d.filter;
  return html`
<section><h2>Plans held by the disable limit</h2>
${d.held.length === 0 ? html`<p>None.</p>` : html`<table id="held-plans"><tr><th>plan</th>${orgHeader(viewer)}<th>feed</th><th>disables</th><th>actions</th><th>status</th><th>decided</th><th>held</th></tr>
${d.held.map((p) => html`<tr><td><a href="/provisioning/held/${p.id}">#${p.id}</a></td>${orgCell(viewer, orgOfRow(p))}<td>${p.file}</td><td><a href="/provisioning/held/${p.id}#affected">${p.disables}</a></td><td><a href="/provisioning/held/${p.id}#actions">${p.actionCount}</a></td><td>${statusBadge(p.status)}</td><td>${p.decidedBy ? `${p.decidedBy} (${p.decidedRole ?? ''}) ${p.decidedAt?.toISOString() ?? ''}` : ''}</td><td>${p.createdAt}</td></tr>`)}</table>`}
</section>
<section><h2>Feeds read</h2>
<table id="feeds"><tr><th>#</th>${orgHeader(viewer)}<th>file</th><th>mode</th><th>rows</th><th>row errors</th><th>actions</th><th>outcome</th><th>read</th></tr>
${d.feeds.map((x) => html`<tr><td>${x.id}</td>${orgCell(viewer, x.org)}<td>${x.path}</td><td>${x.mode}</td><td>${x.rows}</td><td>${x.errors}</td><td>${x.actions > 0 && !x.dry_run && !x.refused ? html`<a href="/provisioning?feed=${x.hash}#actions" id="feed-actions-${x.id}">${x.actions}</a>` : x.actions}</td><td>${x.dry_run ? 'dry run' : x.refused ? `refused (${x.refused})` : 'applied'}</td><td>${x.created_at}</td></tr>`)}</table>
</section>
<section><h2>Audit trail</h2>
<form method="get" action="/provisioning" class="filters">
<label>employee or e-mail <input name="who" value="${f.who ?? ''}"></label>
<label>day <input name="day" type="date" value="${f.day ?? ''}"></label>
<label>status <select name="status"><option value="">all</option>${ACTION_STATUSES.map((s) => html`<option value="${s}" ${s === f.status ? html`selected` : ''}>${s}</option>`)}</select></label>
${f.feed ? html`<input type="hidden" name="feed" value="${f.feed}">` : ''}<button type="submit">Search</button></form>
<table id="actions"><tr>${orgHeader(viewer)}<th>updated</th><th>employee</th><th>e-mail</th><th>action</th><th>before &rarr; after</th><th>status</th><th>attempts</th><th>error</th><th></th></tr>
${d.actions.map((a) => html`<tr>${orgCell(viewer, a.org)}<td>${a.updated_at}</td><td>${a.employee_id}</td><td>${a.email}</td><td>${a.kind}${a.group_id ? html` <small>${a.group_id}</small>` : ''}</td><td><code>${a.before_text ?? html`&mdash;`}</code> &rarr; <code>${a.after_text}</code></td><td>${statusBadge(a.status)}</td><td>${a.attempts}</td><td>${a.error_code ?? ''} ${a.error_message ?? ''}</td>
<td>${a.status === 'failed' ? actionButton(viewer, `/provisioning/actions/${encodeURIComponent(a.action_id)}/retry`, 'Retry', `retry-${a.employee_id}-${a.kind}`, a.org) : ''}</td></tr>`)}
</table>
${f.feed ? html`<p id="feed-filter">Actions of feed <code>${f.feed.slice(0, 12)}&hellip;</code> only. <a href="/provisioning">Show all</a></p>` : ''}
${pager('/provisioning', f.page, d.hasMore, { who: f.who, day: f.day, status: f.status, feed: f.feed })}
</section>
<section><h2>Changes made in the console</h2>
<table id="console-audit"><tr>${orgHeader(viewer)}<th>when</th><th>user</th><th>role</th><th>change</th><th>target</th></tr>${d.changes.map((c) => html`<tr>${orgCell(viewer, c.org ?? 'all')}<td>${c.at}</td><td>${c.username}</td><td>${c.role}</td><td>${c.action}</td><td>${c.target}</td></tr>`)}</table>
</section>`;
}

/** `org`: the plan's organisation (approve and reject act in it). */
export function heldPlanBody(viewer: Viewer, plan: HeldPlan, org: string): SafeHtml {
  const disabled = plan.people.filter((p) => p.kinds.includes('disable'));
  return html`
<p>${viewer.scope.multi ? html`Organisation <strong id="plan-org">${org}</strong>. ` : ''}${statusBadge(plan.status)} Feed <strong>${plan.file}</strong> (${plan.mode}), held ${plan.createdAt}. ${plan.decidedBy ? `Decided by ${plan.decidedBy} (${plan.decidedRole ?? ''}) at ${plan.decidedAt?.toISOString() ?? ''}.` : ''}</p>
<p class="reason">${plan.message}</p>
${plan.status === 'held' ? html`<p class="decide">${actionButton(viewer, `/provisioning/held/${plan.id}/approve`, `Approve: apply all ${plan.actions.length} actions`, 'approve')} ${actionButton(viewer, `/provisioning/held/${plan.id}/reject`, 'Reject: change nothing', 'reject')}
${viewer.role === 'operator' ? '' : html`<em>Only an operator can approve or reject.</em>`}</p>` : ''}
<h2>${disabled.length} people would lose access</h2>
<table id="affected"><tr><th>employee</th><th>e-mail</th><th>changes</th></tr>
${plan.people.map((p) => html`<tr><td>${p.employeeId}</td><td>${p.email}</td><td>${p.kinds.join(', ')}</td></tr>`)}</table>
<h2>Actions</h2>
<table id="actions"><tr><th>employee</th><th>action</th><th>before &rarr; after</th></tr>
${plan.actions.map((a) => html`<tr><td>${a.employeeId}</td><td>${a.kind}${a.groupId ? html` <small>${a.groupId}</small>` : ''}</td><td><code>${JSON.stringify(a.before)}</code> &rarr; <code>${JSON.stringify(a.after)}</code></td></tr>`)}</table>`;
}
