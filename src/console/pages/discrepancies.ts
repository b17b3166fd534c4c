import { html, type SafeHtml } from '../html.ts';
import { pager } from '../layout.ts';
import type { HrReconciliationView } from '../../provisioning/index.ts';

/** Every row behind one reconciliation count of the People page, paged. */
export function discrepanciesBody(kind: string, rows: HrReconciliationView[], page: number, hasMore: boolean): SafeHtml {
  return html`<p><a href="/people">&larr; People</a></p>
<table id="discrepancies"><tr><th>employee</th><th>e-mail</th><th>account</th><th>detail</th></tr>
${rows.map((r) => html`<tr><td>${r.employee_id ?? ''}</td><td>${r.email ?? ''}</td><td>${r.user_id ?? ''}</td><td>${r.detail}</td></tr>`)}</table>
${rows.length === 0 ? html`<p>None.</p>` : ''}
${pager('/people/discrepancies', page, hasMore, { kind })}`;
}
