import { sql } from 'kysely';
import { z } from 'zod';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { AdvisoryLocks } from '../warehouse/lock-session.ts';
import { enqueuePlan, type ApplyDeps } from './apply/enqueue.ts';
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
  return withAdvisoryLock(deps.locks, provisionLock(deps.org), async () => {
    const rows = await sql<{ action_id: string; employee_id: string; email: string; kind: string; group_id: string | null; seq: number; before: unknown; after: unknown; status: string; feed_hash: string | null; platform_user_id: string | null }>`
      select a.action_id, a.employee_id, a.email, a.kind, a.group_id, a.seq, a.before, a.after, a.status, a.feed_hash, i.platform_user_id
        from trainsync.provisioning_actions a left join trainsync.identities i on i.org = a.org and i.employee_id = a.employee_id
       where a.org = ${deps.org} and a.action_id = ${actionId}`.execute(deps.db);
    const row = rows.rows[0];
    if (!row) return { ok: false, reason: `no action ${actionId} of ${deps.org}` };
    if (row.status !== 'failed') return { ok: false, reason: `action ${actionId} is ${row.status}; only a failed action can be retried` };
    const action: PlannedAction = {
      id: row.action_id,
      kind: z.enum(ACTION_KINDS).parse(row.kind),
      employeeId: row.employee_id,
      email: row.email,
      ...(row.group_id ? { groupId: row.group_id } : {}),
      platformUserId: row.platform_user_id,
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
