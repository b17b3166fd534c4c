import { errorMessage } from '../lib/errors.ts';
import { applyScimChanges, type ChangeDeps, type ChangeOptions, type ChangeOutcome, type ScimChange } from './change.ts';
import { employeesWithLiveUser, markPlanned, quarantineUsers, usersOfIds, type ScimUserRow } from './store.ts';
import { toFeedRow, type ScimUserResource } from './user-mapping.ts';

/** The attributes a deactivation needs: a leaver whose other attributes cannot be read is still disabled. */
const IDENTITY_KEYS = ['schemas', 'userName', 'emails', 'name', 'active', 'externalId'] as const;

/** A stored User as the change it states: its current resource and groups, read when the batch runs (so the latest write wins). */
export function changeOf(row: ScimUserRow): ScimChange {
  const resource = row.resource as ScimUserResource;
  let feedRow;
  try {
    feedRow = toFeedRow(resource, row.employee_id, row.groups);
  } catch (error) {
    // Stored before intake checked every attribute the mapping reads: an inactive or deleted
    // User is disabled on its identity alone rather than set aside.
    if (row.active && row.deleted_at === null) throw error;
    const identity = Object.fromEntries(IDENTITY_KEYS.filter((k) => k in resource).map((k) => [k, resource[k]])) as ScimUserResource;
    feedRow = toFeedRow({ ...identity, active: false }, row.employee_id, row.groups);
  }
  return { scimId: row.scim_id, version: row.version, row: feedRow, plannedState: row.planned_state };
}

/**
 * A batch's plan failed: the versions of the Users it read, so that the User of a batch of one
 * is quarantined at the version that failed (service.ts), never a later write of it.
 */
export class UnplannedUsersError extends Error {
  constructor(
    readonly versions: ReadonlyMap<string, number>,
    cause: unknown,
  ) {
    super(errorMessage(cause), { cause });
    this.name = 'UnplannedUsersError';
  }
}

/** What planning a batch did, and the Users it set aside (their stored resource cannot become a feed row). */
export type PlanOutcome = ChangeOutcome & { quarantined: string[] };

/**
 * Plans the Users' current states: reads them, keeps one per employee (a live User wins
 * over a deleted one of the same employee, whose disable is then moot), and applies them.
 * With `unplannedOnly` (the SCIM batches), a User whose latest version is planned already
 * (an earlier batch read it: a PATCH written while its create was being planned) is left
 * alone; a held plan decided plans its Users whatever they are. A User whose resource the
 * mapping cannot read is quarantined at once, alone: the others of the batch are planned.
 * With `unplannedOnly`, a failure is thrown as an UnplannedUsersError.
 */
export async function planUsers(deps: ChangeDeps, scimIds: readonly string[], options: ChangeOptions & { unplannedOnly?: boolean } = {}): Promise<PlanOutcome> {
  if (scimIds.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0, quarantined: [] };
  const rows = await usersOfIds(deps.scope, scimIds, { pendingOnly: options.unplannedOnly === true });
  try {
    const deletedEmployees = rows.filter((r) => r.deleted_at !== null).map((r) => r.employee_id);
    const liveElsewhere = await employeesWithLiveUser(deps.scope, deletedEmployees);
    const moot = rows.filter((r) => r.deleted_at !== null && liveElsewhere.has(r.employee_id));
    await markPlanned(deps.scope, moot.map((r) => ({ scimId: r.scim_id, version: r.version, state: null })));
    const byEmployee = new Map<string, ScimUserRow>();
    for (const r of rows) if (!moot.includes(r)) byEmployee.set(r.employee_id, r);
    const changes: ScimChange[] = [];
    const unreadable: { scimId: string; version: number; reason: string }[] = [];
    for (const r of byEmployee.values()) {
      try {
        changes.push(changeOf(r));
      } catch (error) {
        unreadable.push({ scimId: r.scim_id, version: r.version, reason: `the stored User cannot be mapped: ${errorMessage(error)}` });
      }
    }
    const quarantined = await quarantineUsers(deps.scope, unreadable);
    for (const u of unreadable) deps.log.warn({ org: deps.scope.org, scimId: u.scimId, reason: u.reason }, 'SCIM User quarantined: its change cannot be planned (trainsync status lists it); a new PUT or PATCH of it plans it again');
    return { ...(await applyScimChanges(deps, changes, options)), quarantined };
  } catch (error) {
    // The SCIM batches learn which versions failed; a held plan's decision gets its error as thrown (its refusals keep their class).
    if (options.unplannedOnly !== true) throw error;
    throw new UnplannedUsersError(new Map(rows.map((r) => [r.scim_id, r.version])), error);
  }
}
