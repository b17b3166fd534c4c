import { html, type SafeHtml } from '../html.ts';
import type { GroupBy, StatusByGroup } from '../data/people.ts';
import { statusBars } from './status-bars.ts';
import { describePlatformListAge, type ReconciliationReport } from '../../provisioning/index.ts';

const STATUSES = ['passed', 'completed', 'failed', 'in_progress', 'not_started'];

export function peopleBody(report: ReconciliationReport, by: GroupBy, statuses: StatusByGroup[]): SafeHtml {
  const groups = [...new Set(statuses.map((s) => s.grp))];
  const count = (g: string, st: string): number => statuses.find((s) => s.grp === g && s.status === st)?.n ?? 0;
  return html`
<section><h2>Reconciliation: HR against the platform</h2>
${describePlatformListAge(report) ? html`<p id="platform-list-age">${describePlatformListAge(report)}</p>` : ''}
<table id="reconciliation"><tr><th>discrepancy</th><th>count</th><th>examples</th></tr>
${Object.entries(report.counts).map(([kind, n]) => html`<tr><td>${kind}</td><td><a href="/people/discrepancies?kind=${kind}" id="count-${kind}">${n}</a></td><td>${report.examples[kind as keyof typeof report.examples].map((e) => html`<div>${e.employee_id ?? ''} ${e.email ?? ''}: ${e.detail}</div>`)}</td></tr>`)}
</table>
<p><a href="/people/repair" id="repair-link">Drift repair: dry run first</a></p></section>
<section><h2>Assignment status by ${by}</h2>
<p>Group by: <a href="/people?by=course">course</a> &middot; <a href="/people?by=department">department</a> &middot; <a href="/people?by=location">location</a></p>
${groups.length === 0 ? html`<p>No assignments yet (sync groups and results after provisioning).</p>` : html`
${statusBars(groups.map((g) => ({ label: g, counts: Object.fromEntries(STATUSES.map((st) => [st, count(g, st)])) })), {
    id: 'status-chart',
    keys: STATUSES,
    title: `Assignments of active employees by ${by} and status`,
    href: (group, status) => `/people/assignments?${new URLSearchParams({ by, group, status }).toString()}`,
  })}
<table id="assignment-status"><tr><th>${by}</th>${STATUSES.map((s) => html`<th>${s}</th>`)}</tr>
${groups.map((g, i) => html`<tr><td>${g}</td>${STATUSES.map((st) => {
    const n = count(g, st);
    // Each count links to the people behind it.
    return html`<td>${n > 0 ? html`<a href="/people/assignments?${new URLSearchParams({ by, group: g, status: st }).toString()}" id="assign-${i}-${st}">${n}</a>` : '0'}</td>`;
  })}</tr>`)}</table>`}
</section>`;
}
