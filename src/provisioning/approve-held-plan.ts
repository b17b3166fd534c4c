import { approveHeldUsers, dropHeldUsers } from '../scim/held.ts';
import type { ChangeDeps } from '../scim/change.ts';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { decideHeldPlan, getHeldPlan, type HeldPlan } from './held-plans.ts';
import type { ConfirmationAsk } from './pipeline/confirm.ts';
import { provisionLock } from './pipeline/lock.ts';
import { runPipeline, type Approving } from './pipeline/run-pipeline.ts';
import { feedSource } from './pipeline/sources/feed.ts';
import { snapshotSource } from './pipeline/sources/snapshot.ts';
import { pipelineDeps, type ProvisionDeps } from './pipeline/types.ts';

export interface Decider {
  by: string;
  role: string;
}

export type HeldPlanDecision =
  | { ok: true; enqueued: string[]; waitingOn: string[]; pending: string[]; snapshotError?: string }
  | { ok: false; reason: string; code: 'not-found' | 'other-org' | 'not-held' | 'confirm' | 'refused' };

/**
 * Deciding a held plan, whatever its source, under the organisation's provisioning lock.
 *
 * Approving runs the plan's source through the pipeline again, with the people the plan
 * takes access from let through the disable guard once: a feed's or a repair's reviewed
 * rows, a SCIM burst's Users as they are now. The actions are the ones reviewed unless the
 * platform or the applied state changed meanwhile (then the plan follows them, and anyone
 * else it would now disable meets the guard as usual); the audit rows say the source. A
 * feed is snapshotted into training.employees, as `provision --force` would. The person
 * must type the number of people who will lose access: the pipeline checks it against the
 * disables the plan applies now (pipeline/confirm.ts), and refuses anything else.
 *
 * Rejecting enqueues nothing; a SCIM burst's people go back to active in trainsync's record.
 */
export async function approveHeldPlan(deps: ProvisionDeps, id: number, decider: Decider, confirm: { typed: string | number | undefined; ask: ConfirmationAsk }): Promise<HeldPlanDecision> {
  return withAdvisoryLock(deps.locks, provisionLock(deps.scope.org), async (): Promise<HeldPlanDecision> => {
    const found = await heldOf(deps, id);
    if (!found.ok) return found;
    const { plan } = found;
    const approving: Approving = {
      planId: id,
      people: new Set(plan.people.filter((p) => p.kinds.includes('disable')).map((p) => p.employeeId)),
      confirm,
      shown: plan.disables,
    };
    const outcome = await applyHeld(deps, plan, approving);
    if (!outcome.ok) return outcome;
    if (!(await decideHeldPlan(deps.scope, id, { status: 'approved', ...decider }))) return { ok: false, reason: `plan #${id} was decided meanwhile`, code: 'not-held' };
    deps.log.info({ org: deps.scope.org, plan: id, source: plan.source, by: decider.by, role: decider.role, enqueued: outcome.enqueued.length }, 'held plan approved');
    return outcome;
  });
}

/** Rejects a held plan: nothing is enqueued, nothing changes on the platform. */
export async function rejectHeldPlan(deps: ProvisionDeps, id: number, decider: Decider & { note?: string | undefined }): Promise<HeldPlanDecision> {
  return withAdvisoryLock(deps.locks, provisionLock(deps.scope.org), async (): Promise<HeldPlanDecision> => {
    const found = await heldOf(deps, id);
    if (!found.ok) return found;
    if (!(await decideHeldPlan(deps.scope, id, { status: 'rejected', ...decider }))) return { ok: false, reason: `plan #${id} was decided meanwhile`, code: 'not-held' };
    const pending: string[] = [];
    if (found.plan.source === 'scim') pending.push(...(await dropHeldUsers(scimDeps(deps), refsOf(found.plan))).pending);
    deps.log.info({ org: deps.scope.org, plan: id, source: found.plan.source, by: decider.by, role: decider.role }, 'held plan rejected');
    return { ok: true, enqueued: [], waitingOn: [], pending };
  });
}

async function heldOf(deps: ProvisionDeps, id: number): Promise<{ ok: true; plan: HeldPlan } | Extract<HeldPlanDecision, { ok: false }>> {
  const plan = await getHeldPlan(deps.scope.db, id);
  if (!plan) return { ok: false, reason: `no held plan #${id}`, code: 'not-found' };
  // Decided in the acting organisation, with its client and audit: never another organisation's plan.
  if (plan.org !== deps.scope.org) return { ok: false, reason: `plan #${id} is organisation ${plan.org}'s, not ${deps.scope.org}'s`, code: 'other-org' };
  if (plan.status !== 'held') return { ok: false, reason: `plan #${id} is ${plan.status}, not held`, code: 'not-held' };
  return { ok: true, plan };
}

const refsOf = (plan: HeldPlan): string[] => plan.people.flatMap((p) => (p.ref ? [p.ref] : []));

/** SCIM's deps for a decision: the approved people pass the guard, so its limit does not matter here. */
function scimDeps(deps: ProvisionDeps): ChangeDeps {
  return { ...pipelineDeps(deps), scimMaxDisable: undefined };
}

/** A pipeline's refusal as the decision's: the typed count is the person's to fix, anything else a guard's. */
function notApproved(refused: { reason: string; message: string } | undefined): Extract<HeldPlanDecision, { ok: false }> {
  if (refused?.reason === 'confirm') return { ok: false, reason: refused.message, code: 'confirm' };
  return { ok: false, reason: `not approved: ${refused?.message ?? 'nothing was planned'}`, code: 'refused' };
}

async function applyHeld(deps: ProvisionDeps, plan: HeldPlan, approving: Approving): Promise<HeldPlanDecision> {
  if (plan.source === 'scim') {
    const outcome = await approveHeldUsers(scimDeps(deps), refsOf(plan), approving);
    if (outcome.refused) return notApproved(outcome.refused);
    return { ok: true, enqueued: outcome.enqueued, waitingOn: [], pending: outcome.pending };
  }
  const options = { dryRun: false, force: false, locked: true, approving };
  if (plan.source === 'reconcile') {
    const run = await runPipeline(pipelineDeps(deps), snapshotSource(deps, { maxDisable: undefined, rows: plan.feed.rows }), options);
    if (run.plan.refused || !run.enqueued) return notApproved(run.plan.refused);
    return { ok: true, enqueued: run.enqueued.enqueued, waitingOn: run.enqueued.waitingOn, pending: run.enqueued.skippedEmployees };
  }
  const source = feedSource(deps, {
    hash: plan.feedHash ?? '',
    file: plan.file,
    mode: plan.mode,
    rows: plan.feed.rows,
    invalidEmployeeIds: new Set(plan.feed.keepEmployeeIds),
    invalidEmails: new Set(plan.feed.keepEmails),
    fileErrors: [],
    maxDisable: undefined,
  });
  const run = await runPipeline(pipelineDeps(deps), source, options);
  if (run.plan.refused || !run.enqueued) return notApproved(run.plan.refused);
  return {
    ok: true,
    enqueued: run.enqueued.enqueued,
    waitingOn: run.enqueued.waitingOn,
    pending: run.enqueued.skippedEmployees,
    ...(run.after?.employeesError ? { snapshotError: run.after.employeesError } : {}),
  };
}
