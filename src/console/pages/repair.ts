import { html, type SafeHtml } from '../html.ts';
import { actionButton, type Viewer } from '../layout.ts';
import { describePlatformListAge, type GroupNames, NO_GROUP_NAMES, type Plan, type ReconciliationReport } from '../../provisioning/index.ts';
import { groupCell } from './change-table.ts';
import { consoleWording } from './console-words.ts';

export interface RepairContext {
  /** What the People page counts on the same data (the last users sync): shown beside the plan, so the two pages can be compared. */
  report?: ReconciliationReport;
  groupNames?: GroupNames;
}

/** `reconcile --fix` as a dry run: what would be repaired and why; an operator applies it from here. */
/** `org`: the organisation repaired (the Apply button sends it). */
export function repairBody(viewer: Viewer, plan: Plan, employees: number, org: string, context: RepairContext = {}): SafeHtml {
  const names = context.groupNames ?? NO_GROUP_NAMES;
  const report = context.report;
  const age = report ? describePlatformListAge(report) : undefined;
  return html`
<p>Planned ${employees} employees of the last HR snapshot (<code>training.employees</code>) against the platform as it is now (${plan.platform}).
The repair is planned again when applied, so it repairs what is drifted at that moment.</p>
${report ? html`<p id="reconcile-beside">The <a href="/people">People</a> page counts <strong id="beside-leavers">${report.counts.leaver_with_access}</strong> leaver_with_access and <strong>${report.counts.active_without_account}</strong> active_without_account on the same data; this plan disables <strong id="plan-disables">${plan.counts.disable}</strong> and creates <strong>${plan.counts['create-user']}</strong>.${age ? html` ${age}` : ''}</p>` : ''}
${plan.refused ? html`<p class="reason" id="refused">Refused (${plan.refused.reason}): ${consoleWording(plan.refused.message)}</p>` : ''}
<h2>${plan.actions.length} actions, ${plan.repairs} of them repairs</h2>
<table id="repair-actions"><tr><th>employee</th><th>e-mail</th><th>action</th><th>why</th></tr>
${plan.actions.map((a) => html`<tr><td>${a.employeeId}</td><td>${a.email}</td><td>${a.kind}${a.groupId ? html` <small>${groupCell(a.groupId, names.get(a.groupId.toLowerCase()))}</small>` : ''}</td><td>${a.repair ?? ''}</td></tr>`)}</table>
${plan.drift.length > 0 ? html`<h2>Drift seen and left alone</h2><ul>${plan.drift.map((d) => html`<li>${d.employeeId} ${d.email}: ${d.message}</li>`)}</ul>` : ''}
${plan.actions.length > 0 && !plan.refused ? html`<p>${actionButton(viewer, '/people/repair', `Apply: enqueue the repair`, 'apply-repair', org)}</p>` : ''}`;
}
