import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { applyScimChanges, type ChangeDeps, type ChangeOptions, type ChangeOutcome, type ScimChange } from './change.ts';
import { employeesWithLiveUser, markPlanned, usersOfIds, type ScimUserRow } from './store.ts';
import { toFeedRow, type ScimUserResource } from './user-mapping.ts';

/** A stored User as the change it states: its current resource and groups, read when the batch runs (so the latest write wins). */
export function changeOf(row: ScimUserRow): ScimChange {
  return { scimId: row.scim_id, version: row.version, row: toFeedRow(row.resource as ScimUserResource, row.employee_id, row.groups), plannedState: row.planned_state };
}

/**
 * Plans the Users' current states: reads them, keeps one per employee (a live User wins
 * over a deleted one of the same employee, whose disable is then moot), and applies them.
 * With `unplannedOnly` (the SCIM batches), a User whose latest version is planned already
 * (an earlier batch read it: a PATCH written while its create was being planned) is left
 * alone; a held plan decided plans its Users whatever they are.
 */
export async function planUsers(deps: ChangeDeps & { db: Kysely<Database> }, scimIds: readonly string[], options: ChangeOptions & { unplannedOnly?: boolean } = {}): Promise<ChangeOutcome> {
  if (scimIds.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0 };
  const rows = await usersOfIds(deps.db, deps.org, scimIds, { pendingOnly: options.unplannedOnly === true });
  const deletedEmployees = rows.filter((r) => r.deleted_at !== null).map((r) => r.employee_id);
  const liveElsewhere = await employeesWithLiveUser(deps.db, deps.org, deletedEmployees);
  const moot = rows.filter((r) => r.deleted_at !== null && liveElsewhere.has(r.employee_id));
  await markPlanned(deps.db, deps.org, moot.map((r) => ({ scimId: r.scim_id, version: r.version, state: null })));
  const byEmployee = new Map<string, ScimUserRow>();
  for (const r of rows) if (!moot.includes(r)) byEmployee.set(r.employee_id, r);
  return applyScimChanges(deps, [...byEmployee.values()].map(changeOf), options);
}
