import { sql, type Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { describeMaxDisable, resolveMaxDisable } from '../provisioning/plan/limits.ts';
import type { PlannedAction } from '../provisioning/plan/types.ts';
import type { Database } from '../warehouse/database.ts';
import { SCIM_AUDIT_MARK } from './marks.ts';

/**
 * The deactivation guard: SCIM disables within a sliding hour may not exceed the feed's
 * disable threshold (TRAINSYNC_SCIM_MAX_DISABLE, default the larger of 5 and 10% of the
 * active employees). The excess is held in trainsync.scim_held_actions, not enqueued,
 * until a person releases or drops it (`trainsync scim held`). Called under the
 * provisioning lock, so two workers never both spend the same allowance.
 */

export const GUARD_WINDOW = '1 hour';

export interface GuardDeps {
  /** The threshold and the sliding hour are the organisation's own: its active employees, its disables. */
  org: string;
  db: Kysely<Database>;
  config: Pick<Config, 'TRAINSYNC_SCIM_MAX_DISABLE'>;
}

/** Returns the employees whose disable is held (not to be enqueued). */
export async function holdExcessDisables(deps: GuardDeps, disables: readonly PlannedAction[], scimIdOf: ReadonlyMap<string, string>): Promise<Set<string>> {
  const held = new Set<string>();
  if (disables.length === 0) return held;
  const { db, org } = deps;
  // Already held (an identity provider retrying, the sweep): stays held, spends nothing.
  const open = await db.selectFrom('trainsync.scim_held_actions').select('employee_id').where('org', '=', org).where('status', '=', 'held').where('employee_id', 'in', disables.map((d) => d.employeeId)).execute();
  for (const row of open) held.add(row.employee_id);
  const candidates = disables.filter((d) => !held.has(d.employeeId));
  if (candidates.length === 0) return held;
  const { active } = await db.selectFrom('trainsync.identities').select(sql<number>`count(*) filter (where active)::int`.as('active')).where('org', '=', org).executeTakeFirstOrThrow();
  const { recent } = await db
    .selectFrom('trainsync.provisioning_actions')
    .select(sql<number>`count(*)::int`.as('recent'))
    .where('org', '=', org)
    .where('kind', '=', 'disable')
    .where('feed_hash', '=', SCIM_AUDIT_MARK)
    .where('created_at', '>', sql<Date>`now() - ${GUARD_WINDOW}::interval`)
    .executeTakeFirstOrThrow();
  const limit = resolveMaxDisable(deps.config.TRAINSYNC_SCIM_MAX_DISABLE, active);
  const allowed = Math.max(0, limit - recent);
  const excess = candidates.slice(allowed);
  if (excess.length === 0) return held;
  const reason = `${recent + candidates.length} deactivations via SCIM within ${GUARD_WINDOW}, over the limit of ${describeMaxDisable(deps.config.TRAINSYNC_SCIM_MAX_DISABLE, active)}`;
  await db
    .insertInto('trainsync.scim_held_actions')
    .values(excess.map((d) => ({ org, employee_id: d.employeeId, scim_id: scimIdOf.get(d.employeeId)!, email: d.email, kind: 'disable' as const, reason })))
    .onConflict((oc) => oc.columns(['org', 'employee_id']).where('status', '=', 'held').doNothing())
    .execute();
  for (const d of excess) held.add(d.employeeId);
  return held;
}

/** Held disables of employees the identity provider now states active are moot: marked superseded. */
export async function supersedeHeld(db: Kysely<Database>, org: string, activeEmployeeIds: readonly string[]): Promise<void> {
  if (activeEmployeeIds.length === 0) return;
  await db
    .updateTable('trainsync.scim_held_actions')
    .set({ status: 'superseded', decided_at: sql<Date>`now()` })
    .where('org', '=', org)
    .where('status', '=', 'held')
    .where('employee_id', 'in', activeEmployeeIds)
    .execute();
}
