import { createApp } from '../runtime/app.ts';
import { requireOrgPlatform } from '../config.ts';
import type { OrgSettings } from '../lib/orgs-file.ts';
import type { MaxDisable } from '../provisioning/plan/types.ts';
import { formatPlanTable } from './plan-format.ts';
import { formatOutcome, PROVISION_EXIT } from './provision-report.ts';
import { reconcileFix, RECONCILE_SOURCE, type ReconcileFixResult } from '../provisioning/reconcile-fix.ts';
import type { CommandDeps } from './deps.ts';
import { provisionDeps } from './provision-deps.ts';
import type { ExitCode } from './exit-codes.ts';
import { tableWidth } from './fit-table.ts';
import { createProgressDisplay } from './progress-display.ts';
import { fitText } from './terminal.ts';

export interface ReconcileFixCliOptions {
  dryRun?: boolean;
  force?: boolean;
  json?: boolean;
  maxDisable?: MaxDisable;
  reassertGroups?: boolean;
}

/** The exit status of `reconcile --fix`, as `provision`'s: 2 refused, 1 actions failed or need an identity, else 0. */
export function reconcileFixExitCode(result: ReconcileFixResult): ExitCode {
  if (result.plan.refused !== undefined) return PROVISION_EXIT.refused;
  const problems = result.applied?.audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity').length ?? 0;
  return problems + result.plan.errors.length > 0 ? PROVISION_EXIT.attention : PROVISION_EXIT.ok;
}

export function formatReconcileFixPlan(result: ReconcileFixResult, options: { width?: number } = {}): string {
  return [
    `reconcile --fix: ${result.employees} employees of ${RECONCILE_SOURCE} that trainsync has applied, against the platform as it is now (${result.platformRequests} requests)`,
    result.seats.note,
    formatPlanTable(result.plan, options),
  ].join('\n');
}

/** `trainsync reconcile --fix` for one organisation: runs the repair, prints the plan and the outcome, and returns the exit status. */
export async function runReconcileFix(
  deps: Pick<CommandDeps, 'loadConfig' | 'createLogger' | 'jobs'>,
  options: ReconcileFixCliOptions,
  write: (text: string) => void,
  choose: (config: ReturnType<CommandDeps['loadConfig']>) => OrgSettings,
): Promise<{ code: ExitCode; reason?: string }> {
  const config = deps.loadConfig();
  const org = choose(config);
  requireOrgPlatform(org);
  const log = deps.createLogger(config);
  const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
  // Sentences wrap at the width when it is known; the plan's table is drawn to fit it.
  const say = (text: string): void => write(fitText(text));
  const display = options.json ? undefined : createProgressDisplay({ log: app.log });
  try {
    const result = await reconcileFix(provisionDeps(app, org.slug), {
      dryRun: options.dryRun ?? false,
      force: options.force ?? false,
      maxDisable: options.maxDisable,
      reassertGroups: options.reassertGroups ?? false,
      wait: true,
      onPlan: (planned) => {
        if (!options.json) say(formatReconcileFixPlan(planned, { width: tableWidth() }));
      },
      onProgress: (finished, total) => display?.update('reconcile --fix', { resource: 'reconcile --fix', done: finished, total, unit: 'actions' }),
    });
    if (result.applied && result.applied.audit.length > 0) display?.finish('reconcile --fix', 'done');
    display?.stop();
    const exitCode = reconcileFixExitCode(result);
    if (options.json) {
      write(`${JSON.stringify({ employees: result.employees, seats: result.seats, platformRequests: result.platformRequests, plan: result.plan, applied: result.applied ?? null, exitCode }, null, 2)}\n`);
    } else if (result.plan.refused) {
      // Said last, by the exit reason.
    } else if (options.dryRun) {
      say('dry run: nothing was enqueued');
    } else if (result.applied) {
      say(result.applied.audit.length > 0 ? formatOutcome(result.applied.audit) : 'No drift: nothing to repair.');
    }
    return { code: exitCode, ...(result.plan.refused ? { reason: `refused, nothing was enqueued: ${result.plan.refused.message}` } : {}) };
  } finally {
    display?.stop();
    await app.close();
  }
}
