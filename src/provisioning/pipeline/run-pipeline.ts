import { loadAppliedEmployees, toAppliedEmployee } from '../apply/applied-state.ts';
import { enqueuePlan, type EnqueueResult } from '../apply/enqueue.ts';
import { identitiesOf, insertAdoptedIdentities } from '../apply/identities-store.ts';
import { planProvisioning } from '../plan/plan.ts';
import type { AppliedEmployee, Plan } from '../plan/types.ts';
import { loadLeaverSince } from '../platform-view.ts';
import { guardPlan } from './guard-counts.ts';
import { approvalProblem, type Confirmation } from './guards.ts';
import { holdChange, releaseActive, supersede, SUPERSEDES } from './hold.ts';
import { underProvisionLock } from './lock.ts';
import { readPlatformStep } from './platform.ts';
import { actionReasons } from './reasons.ts';
import { freeSeats, SEATS_NOT_READ, type SeatsInfo } from './seats.ts';
import { shrinkRefusedPlan, shrinkStep, type ShrinkCheck } from './shrink.ts';
import { DEFAULT_DRIFT_SETTINGS, type DesiredState, type PipelineDeps, type Source } from './types.ts';
import { ATTR } from '../../lib/tracing/attributes.ts';
import { annotate, inSpan } from '../../lib/tracing/spans.ts';

/**
 * The one plan-and-apply pipeline. Every source (an HR feed, a SCIM batch, the last
 * snapshot, a held plan approved) goes through the same steps, in one hold of the
 * organisation's provisioning lock:
 *
 *   desired state (the source's) → feed-shrink guard → applied state → platform view
 *   (and first-run adoption) → free seats → plan → guards (disable limit, seats, the typed
 *   count) → hold → audit + enqueue.
 *
 * Only the first step is the source's own, with its guard settings; a source may also
 * record what it read (a feed) and follow the enqueue (a feed snapshots itself into
 * training.employees, SCIM marks its changes planned). A dry run takes no lock and
 * changes nothing; a plan the guards refuse is held (a disable limit) or refused (seats),
 * and nothing of it is enqueued.
 */

/** Approving held plan `planId`: its people's disables pass, nothing new is held, seats are not checked, and it is not superseded meanwhile. */
export interface Approving {
  planId: number;
  people: ReadonlySet<string>;
  /** The count the person typed, checked against the disables the plan applies now (undefined: not asked, e.g. a plan that disables nobody). */
  confirm?: Confirmation | undefined;
  /** The count the held plan showed. */
  shown?: number | undefined;
}

export interface PipelineOptions {
  dryRun: boolean;
  /** `--force`: the seat limit does not refuse; past the disable limit only with `confirm` (the typed count). */
  force: boolean;
  /** `--confirm N`: the count of disables the person accepts (with `force`). */
  confirm?: Confirmation | undefined;
  /** `--allow-shrink`: a whole statement shorter than the share is planned (the disable limit still stands). */
  allowShrink?: boolean | undefined;
  /** The caller holds the provisioning lock already (an approval checks its plan in the same hold). */
  locked?: boolean | undefined;
  approving?: Approving | undefined;
  /** Once the plan is guarded (and held), before anything is enqueued: the CLI prints it. */
  onPlan?: ((result: PlannedRun) => void) | undefined;
}

/** What is known once the plan is guarded. */
export interface PlannedRun {
  desired: DesiredState;
  plan: Plan;
  /** Accounts adopted as identities (first run only). */
  adopted: number;
  adoptionNote?: string;
  seats: SeatsInfo;
  /** Requests made to read the platform's accounts. */
  platformRequests: number;
  /** Employees whose actions are held, not enqueued (every one of a plan held whole). */
  held: string[];
  /** The held plan they are in. */
  heldPlanId?: number;
  /** The feed-shrink guard's finding when it refused the statement (nothing was planned). */
  shrink?: ShrinkCheck;
}

export interface PipelineResult<After> extends PlannedRun {
  /** Set when the plan was enqueued (not a dry run, not refused). */
  enqueued?: EnqueueResult;
  /** What the source's afterEnqueue returned. */
  after?: After;
}

async function loadApplied(deps: PipelineDeps, desired: DesiredState): Promise<AppliedEmployee[]> {
  if (desired.appliedScope === 'all') return loadAppliedEmployees(deps.scope);
  if (desired.rows.length === 0) return [];
  const ids = desired.rows.map((r) => r.employeeId);
  const emails = desired.rows.map((r) => r.email);
  return (await identitiesOf(deps.scope, ids, emails)).map(toAppliedEmployee);
}

function withoutEmployees(plan: Plan, held: ReadonlySet<string>): Pick<Plan, 'actions' | 'byEmployee'> {
  if (held.size === 0) return plan;
  return {
    actions: plan.actions.filter((a) => !held.has(a.employeeId)),
    byEmployee: Object.fromEntries(Object.entries(plan.byEmployee).filter(([employeeId]) => !held.has(employeeId))),
  };
}

/**
 * Traces on: the pipeline is one span (`provisioning <source>`), its steps children of it
 * (the source's statement, the platform's accounts, the plan and its guards, the enqueue),
 * and the jobs it enqueues carry its trace to the workers that call the platform.
 */
export function runPipeline<After>(deps: PipelineDeps, source: Source<After>, options: PipelineOptions): Promise<PipelineResult<After>> {
  return inSpan(`provisioning ${source.kind}`, { [ATTR.org]: deps.scope.org, [ATTR.source]: source.kind }, () => pipeline(deps, source, options));
}

async function pipeline<After>(deps: PipelineDeps, source: Source<After>, options: PipelineOptions): Promise<PipelineResult<After>> {
  return underProvisionLock(deps, options.dryRun || options.locked === true, async (): Promise<PipelineResult<After>> => {
    const desired = await inSpan('provisioning desired state', {}, () => source.desired());
    // A held plan approved was past this guard when it was held (or allowed): its people were reviewed and counted.
    const shrink = options.approving ? undefined : await shrinkStep(deps, source, desired, options.allowShrink ?? false);
    if (shrink?.decision.refused) {
      const refusedPlan = shrinkRefusedPlan(desired, shrink);
      await source.planned?.(refusedPlan, options.dryRun);
      return { desired, plan: refusedPlan, adopted: 0, seats: SEATS_NOT_READ.unchecked, platformRequests: 0, held: [], shrink };
    }
    const readable = desired.fileErrors.length === 0;
    const applied = await loadApplied(deps, desired);
    const platform = await inSpan('provisioning platform view', {}, () => readPlatformStep(deps, source, desired, applied));
    const seats = !readable ? SEATS_NOT_READ.unreadable : source.checkSeats ? await freeSeats(deps.platform()) : SEATS_NOT_READ.unchecked;
    const drift = deps.drift ?? DEFAULT_DRIFT_SETTINGS;
    const planned = planProvisioning({
      ...desired,
      applied: [...applied, ...platform.adopted],
      // The guards below are the pipeline's, per source: the planner only plans.
      options: { maxDisable: source.guard.maxDisable, force: true, freeSeats: seats.free, accessRemoved: drift.accessRemoved, reassertGroups: source.reassertGroups },
      file: source.label,
      platform: platform.view,
      platformNote: platform.note,
      ...(platform.view ? { leaverSince: await loadLeaverSince(deps.scope) } : {}),
    });
    const verdict = planned.refused
      ? { held: [] as string[], limit: planned.maxDisable, activeCount: planned.activeCount, reason: undefined }
      : await guardPlan(deps, source, planned, desired, { freeSeats: options.approving ? undefined : seats.free, force: options.force, confirm: options.confirm, approved: options.approving?.people });
    // An approval applies only with the count of the disables it applies now, typed by the person.
    const approval = options.approving?.confirm && !verdict.refused ? approvalProblem(options.approving, planned, verdict, options.approving.confirm) : undefined;
    const refused = verdict.refused ?? (approval === undefined ? undefined : { reason: 'confirm' as const, message: approval });
    const plan: Plan = { ...planned, maxDisable: verdict.limit, ...(refused ? { refused } : {}) };
    annotate({ [ATTR.planActions]: plan.actions.length, [ATTR.planHeld]: verdict.held.length, [ATTR.planRefused]: plan.refused?.reason });
    await source.planned?.(plan, options.dryRun);

    let heldPlanId: number | undefined;
    const holdMessage = plan.refused?.reason === 'max-disable' ? plan.refused.message : verdict.reason;
    if (!options.dryRun && !options.approving && holdMessage !== undefined && verdict.held.length > 0) {
      heldPlanId = await holdChange(deps.scope, { source, plan, desired, held: verdict.held, message: holdMessage, activeCount: verdict.activeCount, refs: desired.refs });
    }
    const run: PlannedRun = {
      desired,
      plan,
      adopted: platform.adopted.length,
      ...(platform.adoptionNote ? { adoptionNote: platform.adoptionNote } : {}),
      seats,
      platformRequests: platform.requests,
      held: verdict.held,
      ...(heldPlanId === undefined ? {} : { heldPlanId }),
    };
    options.onPlan?.(run);
    if (options.dryRun || plan.refused !== undefined) return run;

    if (platform.adopted.length > 0) await insertAdoptedIdentities(deps.scope, platform.adopted);
    // A newer statement applied: the held plans it makes moot, and the held disables of people it says are active.
    await supersede(deps.scope, SUPERSEDES[source.kind], options.approving?.planId);
    await releaseActive(deps.scope, desired.rows.filter((r) => r.status === 'active').map((r) => r.employeeId), options.approving?.planId);
    const toEnqueue = withoutEmployees(plan, new Set(verdict.held));
    const reasons = actionReasons(toEnqueue.actions, { kind: source.kind, label: source.label, mode: desired.mode, rows: desired.rows });
    const enqueued = await inSpan('provisioning enqueue', {}, () =>
      enqueuePlan(deps, toEnqueue, source.auditMark, {
        source: source.kind,
        reasons,
        createLookUp: source.createLookUp,
        // A few listed employees: only theirs are checked for open actions (a SCIM burst plans many batches a second).
        openOf: desired.appliedScope === 'listed' ? Object.keys(toEnqueue.byEmployee) : undefined,
      }),
    );
    annotate({ [ATTR.enqueued]: enqueued.enqueued.length });
    const after = source.afterEnqueue ? await source.afterEnqueue(enqueued) : undefined;
    return { ...run, enqueued, ...(after === undefined ? {} : { after }) };
  });
}
