import { html, type SafeHtml } from '../html.ts';
import { pager } from '../layout.ts';
import type { AssignmentRow, GroupBy } from '../data/people.ts';
import { statusBadge } from './format.ts';

/** The assignments behind one count of the People page's status chart (a group and a status), paged. */
export function assignmentsBody(d: { by: GroupBy; group: string; status: string; page: number; rows: AssignmentRow[]; hasMore: boolean }): SafeHtml {
  return html`<p><a href="/people?by=${d.by}">&larr; People, by ${d.by}</a></p>
<p>${d.by} <strong>${d.group}</strong>, status ${statusBadge(d.status)}</p>
<table id="assignments"><tr><th>employee</th><th>e-mail</th><th>course</th><th>status</th></tr>
${d.rows.map((r) => html`<tr><td>${r.employee_id ?? ''}</td><td>${r.email ?? ''}</td><td>${r.course_name ?? ''}</td><td>${statusBadge(r.status)}</td></tr>`)}</table>
${d.rows.length === 0 ? html`<p>None.</p>` : ''}
${pager('/people/assignments', d.page, d.hasMore, { by: d.by, group: d.group, status: d.status })}`;
}
