import { z } from 'zod';
import { waitForActions, type ApplyResult } from './apply/enqueue.ts';
import type { Confirmation } from './pipeline/guards.ts';
import { runPipeline } from './pipeline/run-pipeline.ts';
import { emptyPlan, type ShrinkCheck } from './pipeline/shrink.ts';
import { SEATS_NOT_READ, type SeatsInfo } from './pipeline/seats.ts';
import { underReconcileLock, type ReconcileBusy, type ReconcileStarter } from './reconcile-lock.ts';
import { snapshotSource } from './pipeline/sources/snapshot.ts';
import { pipelineDeps, type ProvisionDeps } from './pipeline/types.ts';
import type { MaxDisable, Plan } from './plan/types.ts';

export { RECONCILE_SOURCE, snapshotRows } from './pipeline/sources/snapshot.ts';

/**
 * `reconcile --fix`: drift repair without a new feed. The last feed snapshot
 * (`training.employees`) is the source (pipeline/sources/snapshot.ts), planned, guarded,
 * held, audited and enqueued by the provisioning pipeline as a feed is.
 */

export interface ReconcileFixOptions {
  dryRun: boolean;
  /** `--force`: past the seat limit; past the disable limit only with `confirm`. */
  force: boolean;
  /** `--confirm N`: the disables the person accepts (with `force`). */
  confirm?: Confirmation | undefined;
  /** `--allow-shrink`: a snapshot shorter than the share is planned (the disable limit still stands). */
  allowShrink?: boolean | undefined;
  maxDisable?: MaxDisable | undefined;
  /** Add again every membership on record (the API cannot read them); one write each. */
  reassertGroups?: boolean | undefined;
  /** Wait for the actions (the CLI); the scheduled job only enqueues them. */
  wait: boolean;
  /** Who started it (default the CLI): quoted by another reconcile of the organisation that finds this one running. */
  starter?: ReconcileStarter | undefined;
  onPlan?: (result: ReconcileFixResult) => void;
  onProgress?: (finished: number, total: number) => void;
}

export interface ReconcileFixResult {
  /** Employees of the snapshot with an applied identity: what was planned. */
  employees: number;
  plan: Plan;
  seats: SeatsInfo;
  platformRequests: number;
  /** Set when the plan was enqueued (not a dry run, not refused). */
  applied?: ApplyResult;
  /** The repair the disable limit held, for a person to review (`trainsync held`, the console). */
  heldPlanId?: number;
  /** The feed-shrink guard refused the snapshot (plan.refused says so too): nothing was planned. */
  shrink?: ShrinkCheck;
  /** Another reconcile --fix of the organisation was running: this one yielded, nothing was planned or changed (the plan is empty). */
  busy?: ReconcileBusy;
}

/** The worker's job that runs `reconcile --fix` on a schedule (jobs/reconcile-fix.ts). */
export const RECONCILE_FIX_JOB = 'reconcile-fix';

/** What the scheduled job returns. */
export const reconcileFixSummarySchema = z.object({
  employees: z.number(),
  actions: z.number(),
  repairs: z.number(),
  enqueued: z.number(),
  platformRequests: z.number(),
  /** Set when another reconcile --fix of the organisation was running: this one changed nothing, and says who. */
  skipped: z.string().optional(),
});
export type ReconcileFixSummary = z.output<typeof reconcileFixSummarySchema>;

/**
 * A dry run changes nothing and runs beside anything; a repair runs only while no other
 * repair of the organisation does (reconcile-lock.ts): the one that finds another running
 * returns `busy` at once, having planned and changed nothing. The CLI holds the lock until
 * its actions have finished, the schedule and the console while they plan and enqueue.
 */
export async function reconcileFix(deps: ProvisionDeps, options: ReconcileFixOptions): Promise<ReconcileFixResult> {
  if (options.dryRun) return repair(deps, options);
  const ran = await underReconcileLock(deps, options.starter ?? { by: 'cli' }, () => repair(deps, options));
  if (ran.ran) return ran.value;
  deps.log.warn({ org: deps.scope.org, holder: ran.busy.holder }, ran.busy.message);
  return {
    employees: 0,
    plan: emptyPlan('full', 0, 'platform state not read: another reconcile --fix of the organisation was running'),
    seats: SEATS_NOT_READ.unchecked,
    platformRequests: 0,
    busy: ran.busy,
  };
}

async function repair(deps: ProvisionDeps, options: ReconcileFixOptions): Promise<ReconcileFixResult> {
  const toResult = (run: { desired: { rows: { readonly length: number } }; plan: Plan; seats: SeatsInfo; platformRequests: number; heldPlanId?: number; shrink?: ShrinkCheck }): ReconcileFixResult => ({
    employees: run.desired.rows.length,
    plan: run.plan,
    seats: run.seats,
    platformRequests: run.platformRequests,
    ...(run.heldPlanId === undefined ? {} : { heldPlanId: run.heldPlanId }),
    ...(run.shrink === undefined ? {} : { shrink: run.shrink }),
  });
  const onPlan = options.onPlan;
  const run = await runPipeline(pipelineDeps(deps), snapshotSource(deps, { maxDisable: options.maxDisable, reassertGroups: options.reassertGroups }), {
    dryRun: options.dryRun,
    force: options.force,
    confirm: options.confirm,
    allowShrink: options.allowShrink,
    ...(onPlan ? { onPlan: (planned: Parameters<typeof toResult>[0]) => onPlan(toResult(planned)) } : {}),
  });
  const planned = toResult(run);
  if (run.enqueued === undefined) return planned;
  const ids = [...run.enqueued.enqueued, ...run.enqueued.waitingOn];
  const audit = options.wait ? await waitForActions(deps, ids, options.onProgress) : [];
  return { ...planned, applied: { ...run.enqueued, audit } };
}
