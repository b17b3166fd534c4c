import { type FeedRow, liveOpenActions, type MaxDisable, type PipelineDeps, type Source } from '../provisioning/index.ts';
import { SCIM_AUDIT_MARK } from './marks.ts';
import { platformState, settledByQueuedActions } from './platform-state.ts';
import { markPlanned } from './store.ts';

/**
 * A batch of SCIM changes as a source of the provisioning pipeline (SCIM's adapter lives
 * here, on SCIM's side: the pipeline names no source): each is a one-row delta HR feed (the User as the
 * identity provider states it now), planned against the identities its rows name only. An
 * employee whose earlier actions are still queued is left pending (the plan would start
 * from a state about to change); the SCIM sweep plans it once they finish, unless the
 * change is settled (HR data only, after a planned version: the queued actions suffice). Disables are
 * guarded over a sliding hour of this organisation's SCIM disables; past the limit only the
 * excess is held (changes arrive one by one). Creates learn their platform id in bulk after
 * the burst. Seats are the jobs' to meet: a read per batch would spend the request budget.
 */

export interface ScimChange {
  scimId: string;
  /** The scim_users version this change states: a row changed since is not marked planned. */
  version: number;
  row: FeedRow;
  /** The platform state of the User's version planned last (null: none yet). */
  plannedState?: string | null | undefined;
}

/** The guard's sliding window. */
export const SCIM_GUARD_WINDOW = '1 hour';


export interface ScimAfter {
  /** Employees left pending: earlier actions still queued (the sweep plans them later). */
  pending: string[];
}

export function scimSource(deps: Pick<PipelineDeps, 'scope' | 'queue'>, changes: readonly ScimChange[], maxDisable: MaxDisable | undefined): Source<ScimAfter> {
  let pending = new Set<string>();
  return {
    kind: 'scim',
    label: 'SCIM',
    auditMark: SCIM_AUDIT_MARK,
    desired: async () => {
      const busy = new Set((await liveOpenActions(deps, changes.map((c) => c.row.employeeId))).map((row) => row.employeeId));
      // A busy employee's change that states the platform state planned last (HR data only, say a title
      // PATCHed right after the create) is settled by the queued actions: marked planned, not left to
      // the sweep, which would plan it again, reading the account from the platform, once they finish.
      pending = new Set(changes.filter((c) => busy.has(c.row.employeeId) && !settledByQueuedActions(c.plannedState, c.row)).map((c) => c.row.employeeId));
      const ready = changes.filter((c) => !busy.has(c.row.employeeId));
      return {
        rows: ready.map((c) => c.row),
        mode: 'delta',
        invalidEmployeeIds: new Set(),
        invalidEmails: new Set(),
        fileErrors: [],
        appliedScope: 'listed',
        refs: new Map(ready.map((c) => [c.row.employeeId, c.scimId])),
      };
    },
    guard: { maxDisable, setting: 'TRAINSYNC_SCIM_MAX_DISABLE', window: SCIM_GUARD_WINDOW, holds: 'excess' },
    checkSeats: false,
    adopt: false,
    createLookUp: 'later',
    afterEnqueue: async ({ skippedEmployees }) => {
      for (const employeeId of skippedEmployees) pending.add(employeeId);
      // Held changes are planned too: the hold is a decision waiting on a person, not work left to plan.
      const planned = changes.filter((c) => !pending.has(c.row.employeeId));
      await markPlanned(deps.scope, planned.map((c) => ({ scimId: c.scimId, version: c.version, state: platformState(c.row) })));
      return { pending: [...pending] };
    },
  };
}
