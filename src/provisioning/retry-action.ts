import { z } from 'zod';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { AdvisoryLocks } from '../warehouse/lock-session.ts';
import { findAction } from './apply/actions-store.ts';
import { enqueuePlan, type ApplyDeps } from './apply/enqueue.ts';
import { findIdentity } from './apply/identities-store.ts';
import { planOfActions } from './held-plans.ts';
import { ACTION_KINDS, type PlannedAction } from './plan/types.ts';
import { provisionLock } from './pipeline/lock.ts';

const stateSchema = z.record(z.string(), z.union([z.boolean(), z.string()]));

export type RetryOutcome = { ok: true; actionId: string } | { ok: false; reason: string };

/**
 * Enqueues a failed action again, as its own one-link chain with the same id: its audit row
 * goes back to `queued` (attempts keep counting) and the job runs as it did the first time.
 */
export async function retryFailedAction(deps: ApplyDeps & { locks: AdvisoryLocks }, actionId: string): Promise<RetryOutcome> {
  return withAdvisoryLock(deps.locks, provisionLock(deps.scope), async () => {
    const row = await findAction(deps.scope, actionId);
    if (!row) return { ok: false, reason: `no action ${actionId} of ${deps.scope.org}` };
    if (row.status !== 'failed') return { ok: false, reason: `action ${actionId} is ${row.status}; only a failed action can be retried` };
    const identity = await findIdentity(deps.scope, row.employee_id);
    const action: PlannedAction = {
      id: row.action_id,
      kind: z.enum(ACTION_KINDS).parse(row.kind),
      employeeId: row.employee_id,
      email: row.email,
      ...(row.group_id ? { groupId: row.group_id } : {}),
      platformUserId: identity?.platform_user_id ?? null,
      seq: row.seq,
      baseVersion: 0,
      before: row.before === null ? null : stateSchema.parse(row.before),
      after: stateSchema.parse(row.after),
    };
    const result = await enqueuePlan(deps, planOfActions([action]), row.feed_hash);
    if (!result.enqueued.includes(actionId)) return { ok: false, reason: `an earlier action of ${row.employee_id} is still queued; retry once it has finished` };
    return { ok: true, actionId };
  });
}
