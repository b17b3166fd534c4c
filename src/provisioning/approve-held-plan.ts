import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { decideHeldPlan, getHeldPlan, type HeldPlan } from './held-plans.ts';
import type { HeldDecisionDeps } from './held-sources.ts';
import type { ConfirmationAsk } from './pipeline/confirm.ts';
import { provisionLock } from './pipeline/lock.ts';
import type { Approving } from './pipeline/run-pipeline.ts';
import type { PlanRefusal } from './plan/types.ts';

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
 * rows, a SCIM burst's Users as they are now. The source is found by the plan's kind in the
 * registry the app was composed with (held-sources.ts): nothing here names one. The actions are the ones reviewed unless the
 * platform or the applied state changed meanwhile (then the plan follows them, and anyone
 * else it would now disable meets the guard as usual); the audit rows say the source. A
 * feed is snapshotted into training.employees, as `provision --force` would. The person
 * must type the number of people who will lose access: the pipeline checks it against the
 * disables the plan applies now (pipeline/confirm.ts), and refuses anything else.
 *
 * Rejecting enqueues nothing; the source takes back what it recorded (a SCIM burst's people
 * go back to active in trainsync's record).
 */
export async function approveHeldPlan(deps: HeldDecisionDeps, id: number, decider: Decider, confirm: { typed: string | number | undefined; ask: ConfirmationAsk }): Promise<HeldPlanDecision> {
  return withAdvisoryLock(deps.locks, provisionLock(deps.scope), async (): Promise<HeldPlanDecision> => {
    const found = await heldOf(deps, id);
    if (!found.ok) return found;
    const { plan } = found;
    const approving: Approving = {
      planId: id,
      people: new Set(plan.people.filter((p) => p.kinds.includes('disable')).map((p) => p.employeeId)),
      confirm,
      shown: plan.disables,
    };
    const outcome = await deps.heldSources[plan.source].approve(deps, plan, approving);
    if (!outcome.applied) return notApproved(outcome.refused);
    if (!(await decideHeldPlan(deps.scope, id, { status: 'approved', ...decider }))) return { ok: false, reason: `plan #${id} was decided meanwhile`, code: 'not-held' };
    deps.log.info({ org: deps.scope.org, plan: id, source: plan.source, by: decider.by, role: decider.role, enqueued: outcome.enqueued.length }, 'held plan approved');
    const { enqueued, waitingOn, pending, snapshotError } = outcome;
    return { ok: true, enqueued, waitingOn, pending, ...(snapshotError ? { snapshotError } : {}) };
  });
}

/** Rejects a held plan: nothing is enqueued, nothing changes on the platform. */
export async function rejectHeldPlan(deps: HeldDecisionDeps, id: number, decider: Decider & { note?: string | undefined }): Promise<HeldPlanDecision> {
  return withAdvisoryLock(deps.locks, provisionLock(deps.scope), async (): Promise<HeldPlanDecision> => {
    const found = await heldOf(deps, id);
    if (!found.ok) return found;
    if (!(await decideHeldPlan(deps.scope, id, { status: 'rejected', ...decider }))) return { ok: false, reason: `plan #${id} was decided meanwhile`, code: 'not-held' };
    const { pending } = await deps.heldSources[found.plan.source].reject(deps, found.plan);
    deps.log.info({ org: deps.scope.org, plan: id, source: found.plan.source, by: decider.by, role: decider.role }, 'held plan rejected');
    return { ok: true, enqueued: [], waitingOn: [], pending };
  });
}

async function heldOf(deps: HeldDecisionDeps, id: number): Promise<{ ok: true; plan: HeldPlan } | Extract<HeldPlanDecision, { ok: false }>> {
  const plan = await getHeldPlan(deps.scope.db, id);
  if (!plan) return { ok: false, reason: `no held plan #${id}`, code: 'not-found' };
  // Decided in the acting organisation, with its client and audit: never another organisation's plan.
  if (plan.org !== deps.scope.org) return { ok: false, reason: `plan #${id} is organisation ${plan.org}'s, not ${deps.scope.org}'s`, code: 'other-org' };
  if (plan.status !== 'held') return { ok: false, reason: `plan #${id} is ${plan.status}, not held`, code: 'not-held' };
  return { ok: true, plan };
}

/** A pipeline's refusal as the decision's: the typed count is the person's to fix, anything else a guard's. */
function notApproved(refused: PlanRefusal | undefined): Extract<HeldPlanDecision, { ok: false }> {
  if (refused?.reason === 'confirm') return { ok: false, reason: refused.message, code: 'confirm' };
  return { ok: false, reason: `not approved: ${refused?.message ?? 'nothing was planned'}`, code: 'refused' };
}
