import { html, type SafeHtml } from '../html.ts';
import type { RunRow } from '../data/runs.ts';
import type { HeldPlanSummary } from '../../provisioning/index.ts';
import type { ActionRow } from '../data/provisioning.ts';
import { actionButton, orgCell, orgHeader, type Viewer } from '../layout.ts';
import { orgOfRow } from '../scope.ts';
import { orgScoped } from '../../queue/org-scope.ts';
import { relativeText } from '../time.ts';
import { seconds, statusBadge, when } from './format.ts';

export interface OverviewData {
  viewer: Viewer;
  /** Sync jobs queued or orphaned (their process gone): what an operator may cancel. */
  pending: Array<{ org: string; resource: string; jobId: string; state: string }>;
  runs: RunRow[];
  schedules: Array<{ id: string; pattern: string | null; next: string | null }>;
  health: Record<string, string>;
  held: HeldPlanSummary[];
  attention: ActionRow[];
  attentionTotal: number;
  /** The moment the page was made: "in 3 h" and "5 min ago" are counted from it. */
  now: Date;
}

export function overviewBody(d: OverviewData): SafeHtml {
  const deps = ['postgres', 'redis'];
  return html`
<section><h2>Dependencies</h2><ul class="health">${deps.map((name) =>
    html`<li>${name}: ${d.health[name] === undefined ? statusBadge('up') : html`${statusBadge('down')} ${d.health[name]}`}</li>`)}</ul></section>
<section><h2>Needs attention</h2>
${d.held.length === 0 ? html`<p>No plan held by the disable limit.</p>` : html`<ul>${d.held.map((p) =>
    html`<li><a href="/provisioning/held/${p.id}">Plan #${p.id}</a> ${d.viewer.scope.multi ? `[${orgOfRow(p) ?? ''}] ` : ''}(${p.file}): <a href="/provisioning/held/${p.id}#affected">${p.disables} disables</a>, <a href="/provisioning/held/${p.id}#actions">${p.actionCount} actions</a>, held ${when(p.createdAt, d.now)}</li>`)}</ul>`}
<p><a href="/provisioning?status=failed">${d.attentionTotal} provisioning actions failed or need an identity</a></p>
${d.attention.length > 0 ? html`<table><tr>${orgHeader(d.viewer)}<th>employee</th><th>e-mail</th><th>action</th><th>status</th><th>error</th></tr>${d.attention.map((a) =>
    html`<tr>${orgCell(d.viewer, a.org)}<td>${a.employee_id}</td><td>${a.email}</td><td>${a.kind}</td><td>${statusBadge(a.status)}</td><td>${a.error_code ?? ''}</td></tr>`)}</table>` : ''}
</section>
<section><h2>Queued or orphaned syncs</h2>
${d.pending.length === 0 ? html`<p>None.</p>` : html`<table id="pending"><tr>${orgHeader(d.viewer)}<th>resource</th><th>job</th><th>state</th><th></th></tr>${d.pending.map((p) =>
    html`<tr>${orgCell(d.viewer, p.org)}<td><a href="/runs?resource=${p.resource}">${p.resource}</a></td><td>${p.jobId}</td><td>${p.state}</td><td>${actionButton(d.viewer, `/sync/${p.resource}/cancel`, 'Cancel', d.viewer.scope.multi ? `cancel-${p.org}-${p.resource}` : `cancel-${p.resource}`, p.org)}</td></tr>`)}</table>`}
</section>
<section><h2>Last run per resource</h2>
<table id="last-runs"><tr>${orgHeader(d.viewer)}<th>resource</th><th>status</th><th>started</th><th>rows</th><th>requests</th><th>duration</th><th>quarantined</th><th>next scheduled</th></tr>
${d.runs.map((r) => {
  const next = d.schedules.find((s) => s.id === orgScoped(r.org, `sync-${r.resource}`));
  return html`<tr>${orgCell(d.viewer, r.org)}<td><a href="/runs?resource=${r.resource}">${r.resource}</a></td><td>${statusBadge(r.status)}</td><td><a href="/runs/${r.id}">${when(r.started_at)}</a> <span class="relative">(${relativeText(r.started_at, d.now)})</span></td><td><a href="/runs/${r.id}">${r.rows}</a></td><td><a href="/runs/${r.id}">${r.requests}</a></td><td>${seconds(r.seconds)}</td><td><a href="/runs/${r.id}#quarantine" id="${d.viewer.scope.multi ? `quarantined-${r.org}-${r.resource}` : `quarantined-${r.resource}`}">${r.quarantined}</a></td><td class="next">${when(next?.next, d.now)}</td></tr>`;
})}
</table>
${d.runs.length === 0 ? html`<p>No run yet.</p>` : ''}
<h3>Schedules</h3>
${d.schedules.length === 0 ? html`<p>None registered (the worker registers them when it starts).</p>` : html`<table id="schedules"><tr><th>job</th><th>cron (UTC)</th><th>next</th></tr>${d.schedules.map((s) => html`<tr><td>${s.id}</td><td><code>${s.pattern ?? ''}</code></td><td>${when(s.next, d.now)}</td></tr>`)}</table>`}
</section>`;
}
