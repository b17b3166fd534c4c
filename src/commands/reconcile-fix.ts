import { createApp } from '../runtime/app.ts';
import { requireOrgPlatform } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import type { MaxDisable } from '../provisioning/plan/types.ts';
import { formatPlanTable, type PlanTableOptions } from './render/plan-format.ts';
import { loadGroupNames } from '../provisioning/group-names.ts';
import { reconciliationReport, type ReconciliationReport } from '../provisioning/reconciliation.ts';
import { describePlatformListAge } from '../provisioning/platform-list-age.ts';
import { refusedReason } from './render/refusal-line.ts';
import { confirmWithoutForce, forceConfirmation } from './options/confirm-option.ts';
import { UsageError } from './options/exit-codes.ts';
import { formatOutcome, PROVISION_EXIT } from './render/provision-report.ts';
import { reconcileFix, RECONCILE_SOURCE, type ReconcileFixResult } from '../provisioning/reconcile-fix.ts';
import type { CommandDeps } from './options/deps.ts';
import { provisionDeps } from './options/provision-deps.ts';
import type { ExitCode } from './options/exit-codes.ts';
import { tableWidth } from './render/fit-table.ts';
import { createProgressDisplay } from './render/progress-display.ts';
import { fitText } from './render/terminal.ts';

export interface ReconcileFixCliOptions {
  dryRun?: boolean;
  force?: boolean;
  confirm?: number;
  allowShrink?: boolean;
  json?: boolean;
  maxDisable?: MaxDisable;
  reassertGroups?: boolean;
}

/** The exit status of `reconcile --fix`, as `provision`'s: 2 refused (or another reconcile of the organisation running), 1 actions failed or need an identity, else 0. */
export function reconcileFixExitCode(result: ReconcileFixResult): ExitCode {
  // Another reconcile --fix of the organisation was running: this one changed nothing (2, as a conflict is).
  if (result.busy !== undefined || result.plan.refused !== undefined) return PROVISION_EXIT.refused;
  const problems = result.applied?.audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity').length ?? 0;
  return problems + result.plan.errors.length > 0 ? PROVISION_EXIT.attention : PROVISION_EXIT.ok;
}

/**
 * What `reconcile` (and the console's People page) counts on the same data, beside the
 * repair: they compare with the last users sync, the repair with the platform now, so the
 * line says how old that list is and what trainsync changed since.
 */
export function formatReconciliationBeside(report: ReconciliationReport): string {
  const c = report.counts;
  const age = describePlatformListAge(report);
  return `reconcile counts ${c.leaver_with_access} leaver_with_access, ${c.active_without_account} active_without_account, ${c.pending_action} pending_action${age ? `. ${age}` : ''}`;
}

export function formatReconcileFixPlan(result: ReconcileFixResult, options: PlanTableOptions & { report?: ReconciliationReport } = {}): string {
  return [
    `reconcile --fix: ${result.employees} employees of ${RECONCILE_SOURCE} that trainsync has applied, against the platform as it is now (${result.platformRequests} requests)`,
    ...(options.report ? [formatReconciliationBeside(options.report)] : []),
    result.seats.note,
    formatPlanTable(result.plan, { ...options, everyAction: 'every one: reconcile --fix --dry-run --json' }),
  ].join('\n');
}

/** `trainsync reconcile --fix` for one organisation: runs the repair, prints the plan and the outcome, and returns the exit status. */
export async function runReconcileFix(
  deps: Pick<CommandDeps, 'loadConfig' | 'createLogger' | 'jobs'>,
  options: ReconcileFixCliOptions,
  write: (text: string) => void,
  choose: (config: ReturnType<CommandDeps['loadConfig']>) => OrgSettings,
): Promise<{ code: ExitCode; reason?: string }> {
  const withoutForce = confirmWithoutForce(options);
  if (withoutForce !== undefined) throw new UsageError(withoutForce);
  const config = deps.loadConfig();
  const org = choose(config);
  requireOrgPlatform(org);
  const log = deps.createLogger(config);
  const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
  // Sentences wrap at the width when it is known; the plan's table is drawn to fit it.
  const say = (text: string): void => write(fitText(text));
  const display = options.json ? undefined : createProgressDisplay({ log: app.log });
  try {
    const [groupNames, report] = options.json ? [undefined, undefined] : await Promise.all([loadGroupNames(app.scopes.scope(org.slug)), reconciliationReport(app.scopes.scope(org.slug), 0)]);
    const result = await reconcileFix(provisionDeps(app, org.slug), {
      dryRun: options.dryRun ?? false,
      force: options.force ?? false,
      confirm: forceConfirmation(options.confirm),
      allowShrink: options.allowShrink ?? false,
      maxDisable: options.maxDisable,
      reassertGroups: options.reassertGroups ?? false,
      wait: true,
      onPlan: (planned) => {
        if (!options.json) say(formatReconcileFixPlan(planned, { width: tableWidth(), ...(groupNames ? { groupNames } : {}), ...(report ? { report } : {}) }));
      },
      onProgress: (finished, total) => display?.update('reconcile --fix', { resource: 'reconcile --fix', done: finished, total, unit: 'actions' }),
    });
    if (result.applied && result.applied.audit.length > 0) display?.finish('reconcile --fix', 'done');
    display?.stop();
    const exitCode = reconcileFixExitCode(result);
    if (options.json) {
      write(
        `${JSON.stringify({ employees: result.employees, seats: result.seats, platformRequests: result.platformRequests, plan: result.plan, applied: result.applied ?? null, heldPlanId: result.heldPlanId ?? null, busy: result.busy ?? null, exitCode }, null, 2)}\n`,
      );
    } else if (result.busy) {
      // Said last, by the exit reason: nothing was planned, so no plan was printed.
    } else if (result.shrink?.decision.refused) {
      // Nothing was planned, so no plan was printed: the whole sentence, then the short reason last.
      say(`REFUSED (${result.shrink.decision.reason}): ${result.shrink.decision.message}`);
    } else if (result.plan.refused) {
      // Said last, by the exit reason.
    } else if (options.dryRun) {
      say('dry run: nothing was enqueued');
    } else if (result.applied) {
      say(result.applied.audit.length > 0 ? formatOutcome(result.applied.audit) : 'No drift: nothing to repair.');
    }
    if (result.busy) return { code: exitCode, reason: result.busy.message };
    const refused = result.plan.refused;
    const reason = refused ? refusedReason(refused, { disables: result.plan.counts.disable, limit: result.plan.maxDisable, heldPlanId: result.heldPlanId, dryRun: options.dryRun ?? false, json: options.json ?? false }) : undefined;
    return { code: exitCode, ...(reason ? { reason } : {}) };
  } finally {
    display?.stop();
    await app.close();
  }
}
