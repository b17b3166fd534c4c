import { type Approving, type MaxDisable, type PipelineDeps, type PlanRefusal, runPipeline, snapshotEmployees } from '../provisioning/index.ts';
import { scimSource, type ScimChange } from './source.ts';

export type { ScimChange } from './source.ts';

/**
 * SCIM changes: each is a one-row delta HR feed. The rows are snapshotted into
 * training.employees (and its history) as a feed's rows are, then planned, guarded, held,
 * audited and enqueued by the provisioning pipeline, the SCIM batch its source
 * (source.ts): the same lock, platform view (the accounts the batch touches;
 * a batch of creates reads nothing), disable guard (over a sliding hour of the
 * organisation's SCIM disables), hold, audit rows and jobs as a feed's. The only platform
 * calls here are those reads: the writes are the jobs', within the budget.
 */

export interface ChangeDeps extends PipelineDeps {
  /** TRAINSYNC_SCIM_MAX_DISABLE: unset, the feed's default (the larger of 5 and 10% of the active employees). */
  scimMaxDisable: MaxDisable | undefined;
}

export interface ChangeOptions {
  /** Approving held plan `planId`: these people's held disables go through, once (with the count the person typed). */
  approving?: Approving | undefined;
  /** The caller holds the provisioning lock (an approval or a rejection). */
  locked?: boolean | undefined;
}

export interface ChangeOutcome {
  enqueued: string[];
  /** Employees left pending (earlier actions still queued). */
  pending: string[];
  /** Employees whose disable the guard held. */
  held: string[];
  /** Creates queued without their id lookup: a resolve pass is due once they have run. */
  deferredCreates: number;
  /** The pipeline refused the batch (an approval's typed count that is not the disables it applies now): nothing was enqueued. */
  refused?: PlanRefusal;
}

/** Snapshots, plans and enqueues a batch of changes (one per employee). */
export async function applyScimChanges(deps: ChangeDeps, changes: readonly ScimChange[], options: ChangeOptions = {}): Promise<ChangeOutcome> {
  if (changes.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0 };
  await snapshotEmployees(deps.scope, { rows: changes.map((c) => c.row), mode: 'delta' });
  const run = await runPipeline(deps, scimSource(deps, changes, deps.scimMaxDisable), { dryRun: false, force: false, locked: options.locked, approving: options.approving });
  const { log } = deps;
  for (const u of run.plan.unsupported) log.info({ employeeId: u.employeeId, field: u.field }, `SCIM change not applied to the platform: ${u.message}`);
  for (const e of run.plan.errors) log.warn({ employeeId: e.employeeId, field: e.field }, `SCIM change not planned: ${e.message}`);
  for (const employeeId of run.held) log.warn({ employeeId, plan: run.heldPlanId }, 'SCIM deactivation held by the guard: `trainsync held` lists it, --approve ID applies it');
  const enqueued = run.enqueued?.enqueued ?? [];
  const ids = new Set(enqueued);
  const deferredCreates = run.plan.actions.filter((a) => a.kind === 'create-user' && ids.has(a.id)).length;
  const pending = run.after?.pending ?? [];
  if (enqueued.length > 0 || pending.length > 0) log.debug({ org: deps.scope.org, changes: changes.length, enqueued: enqueued.length, pending: pending.length, held: run.held.length }, 'SCIM changes planned');
  return { enqueued, pending, held: run.held, deferredCreates, ...(run.plan.refused ? { refused: run.plan.refused } : {}) };
}
