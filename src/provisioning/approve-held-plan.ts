import { errorMessage } from '../lib/errors.ts';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import { snapshotEmployees } from '../warehouse/load-employees.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import { enqueuePlan, type ApplyDeps, type EnqueueResult } from './apply/enqueue.ts';
import { decideHeldPlan, getHeldPlan, planOfActions } from './held-plans.ts';
import { provisionLock } from './provision-feed.ts';

export interface Decider {
  by: string;
  role: string;
}

export type HeldPlanDecision = { ok: true; enqueued?: EnqueueResult; snapshotError?: string } | { ok: false; reason: string };

/**
 * Approves a held plan: its actions are enqueued exactly as `provision --force` would
 * enqueue them (the same chains, ids and audit rows), under the provisioning lock so no
 * feed is planned meanwhile, and the feed is snapshotted into training.employees as that
 * run would have done. Workers apply the actions; the audit trail records each outcome.
 */
export async function approveHeldPlan(deps: ApplyDeps & { withPgClient: PgLender }, id: number, decider: Decider): Promise<HeldPlanDecision> {
  return withAdvisoryLock(deps.withPgClient, provisionLock(deps.org), async () => {
    const plan = await getHeldPlan(deps.db, id);
    if (!plan) return { ok: false, reason: `no held plan #${id}` };
    // Enqueued with the acting organisation's client and audit: never another organisation's plan.
    if (plan.org !== deps.org) return { ok: false, reason: `plan #${id} is organisation ${plan.org}'s, not ${deps.org}'s` };
    if (plan.status !== 'held') return { ok: false, reason: `plan #${id} is ${plan.status}, not held` };
    if (!(await decideHeldPlan(deps.db, deps.org, id, { status: 'approved', ...decider }))) return { ok: false, reason: `plan #${id} was decided meanwhile` };
    const enqueued = await enqueuePlan(deps, planOfActions(plan.actions), plan.feedHash);
    deps.log.info({ org: deps.org, plan: id, by: decider.by, role: decider.role, enqueued: enqueued.enqueued.length }, 'held plan approved');
    // The warehouse's copy of the feed; a failure here must not abandon the actions just enqueued.
    const snapshotError = await snapshotEmployees(deps.withPgClient, deps.org, {
      rows: plan.feed.rows,
      mode: plan.mode,
      keepEmployeeIds: new Set(plan.feed.keepEmployeeIds),
      keepEmails: new Set(plan.feed.keepEmails),
    }).then(
      () => undefined,
      (error: unknown) => {
        deps.log.warn({ err: error, plan: id }, 'employee snapshot of an approved plan failed');
        return errorMessage(error);
      },
    );
    return { ok: true, enqueued, ...(snapshotError ? { snapshotError } : {}) };
  });
}

/** Rejects a held plan: nothing is enqueued, nothing changes on the platform. */
export async function rejectHeldPlan(deps: ApplyDeps, id: number, decider: Decider): Promise<HeldPlanDecision> {
  if (!(await decideHeldPlan(deps.db, deps.org, id, { status: 'rejected', ...decider }))) return { ok: false, reason: `plan #${id} is not a held plan of ${deps.org} (decided, superseded, or another organisation's)` };
  deps.log.info({ plan: id, by: decider.by, role: decider.role }, 'held plan rejected');
  return { ok: true };
}
