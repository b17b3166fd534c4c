import { createApp } from '../runtime/app.ts';
import { requireOrgPlatform } from '../config.ts';
import type { OrgSettings } from '../lib/orgs-file.ts';
import type { MaxDisable } from '../provisioning/plan/types.ts';
import { formatPlanTable } from './plan-format.ts';
import { formatOutcome, PROVISION_EXIT } from './provision-report.ts';
import { reconcileFix, RECONCILE_SOURCE, type ReconcileFixResult } from '../provisioning/reconcile-fix.ts';
import type { CommandDeps } from './deps.ts';
import { provisionDeps } from './provision-deps.ts';

export interface ReconcileFixCliOptions {
  dryRun?: boolean;
  force?: boolean;
  json?: boolean;
  maxDisable?: MaxDisable;
  reassertGroups?: boolean;
}

/** The exit status of `reconcile --fix`, as `provision`'s: 2 refused, 1 actions failed or need an identity, else 0. */
export function reconcileFixExitCode(result: ReconcileFixResult): number {
  if (result.plan.refused !== undefined) return PROVISION_EXIT.refused;
  const problems = result.applied?.audit.filter((r) => r.status === 'failed' || r.status === 'needs-identity').length ?? 0;
  return problems + result.plan.errors.length > 0 ? PROVISION_EXIT.attention : PROVISION_EXIT.ok;
}

export function formatReconcileFixPlan(result: ReconcileFixResult): string {
  return [
    `reconcile --fix: ${result.employees} employees of ${RECONCILE_SOURCE} that trainsync has applied, against the platform as it is now (${result.platformRequests} requests)`,
    result.seats.note,
    formatPlanTable(result.plan),
  ].join('\n');
}

/** `trainsync reconcile --fix` for one organisation: runs the repair, prints the plan and the outcome, and returns the exit status. */
export async function runReconcileFix(
  deps: Pick<CommandDeps, 'loadConfig' | 'createLogger' | 'jobs'>,
  options: ReconcileFixCliOptions,
  write: (text: string) => void,
  choose: (config: ReturnType<CommandDeps['loadConfig']>) => OrgSettings,
): Promise<number> {
  const config = deps.loadConfig();
  const org = choose(config);
  requireOrgPlatform(org);
  const log = deps.createLogger(config);
  const app = await createApp(config, log, { jobs: deps.jobs, migrate: true });
  let lastProgress = 0;
  try {
    const result = await reconcileFix(provisionDeps(app, org.slug), {
      dryRun: options.dryRun ?? false,
      force: options.force ?? false,
      maxDisable: options.maxDisable,
      reassertGroups: options.reassertGroups ?? false,
      wait: true,
      onPlan: (planned) => {
        if (!options.json) write(`${formatReconcileFixPlan(planned)}\n`);
      },
      onProgress: (finished, total) => {
        if (options.json || Date.now() - lastProgress < 5_000) return;
        lastProgress = Date.now();
        process.stderr.write(`progress reconcile --fix: ${finished}/${total} actions finished\n`);
      },
    });
    const exitCode = reconcileFixExitCode(result);
    if (options.json) {
      write(`${JSON.stringify({ employees: result.employees, seats: result.seats, platformRequests: result.platformRequests, plan: result.plan, applied: result.applied ?? null, heldPlanId: result.heldPlanId ?? null, exitCode }, null, 2)}\n`);
    } else if (result.plan.refused) {
      const held = result.heldPlanId === undefined ? '' : ` Held as plan #${result.heldPlanId}: review it with \`trainsync held\` or in the console, then approve or reject it.`;
      process.stderr.write(`trainsync: refused, nothing was enqueued: ${result.plan.refused.message}${held}\n`);
    } else if (options.dryRun) {
      write('dry run: nothing was enqueued\n');
    } else if (result.applied) {
      write(result.applied.audit.length > 0 ? `${formatOutcome(result.applied.audit)}\n` : 'No drift: nothing to repair.\n');
    }
    return exitCode;
  } finally {
    await app.close();
  }
}
