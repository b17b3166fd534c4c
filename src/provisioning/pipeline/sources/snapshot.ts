import { snapshotShrinkCounts, snapshotWithIdentities } from '../../apply/identities-store.ts';
import type { FeedRow } from '../../feed/types.ts';
import type { HeldSource } from '../../held-sources.ts';
import type { MaxDisable } from '../../plan/types.ts';
import { runPipeline } from '../run-pipeline.ts';
import { pipelineDeps, type Source } from '../types.ts';
import type { OrgDb } from '../../../warehouse/scope.ts';

/**
 * The last HR snapshot as a source (`reconcile --fix`): training.employees, as `provision`,
 * `load-feed` or SCIM left it, planned again against the platform's current accounts for
 * the employees trainsync has applied something to (`trainsync.identities`). Drift repair
 * without a new feed.
 *
 * The snapshot does not keep groups, role or organisation identifier: those come from the
 * applied state, so memberships are re-added only when an account is created again (or
 * with `reassertGroups`). Employees the snapshot does not list are left alone (a delta),
 * and nobody is created who was never applied: joiners need a feed. Past the disable limit
 * the whole repair is held, as a feed is.
 *
 * Employees the snapshot marks removed (a full feed that no longer listed them) are leavers
 * by absence, so when any of them still has access the snapshot is a whole statement and
 * meets the feed-shrink guard (pipeline/shrink.ts) with its listed employees as rows: a feed
 * cut short and loaded with `load-feed` is refused here as `provision` refuses it.
 */

/** The snapshot `reconcile --fix` plans from. */
export const RECONCILE_SOURCE = 'training.employees';

/** One organisation's snapshot employees that have an identity, as feed rows (a removed employee is inactive). */
export async function snapshotRows(scope: OrgDb): Promise<FeedRow[]> {
  const rows = await snapshotWithIdentities(scope);
  return rows.map((r, index) => ({
    line: index + 1,
    employeeId: r.employee_id,
    email: r.email.toLowerCase(),
    emailDisplay: r.email.toLowerCase() === r.identity_email.toLowerCase() ? r.identity_email : r.email,
    firstName: r.first_name,
    lastName: r.last_name,
    status: r.removed_at !== null ? 'inactive' : r.status,
    groups: [...new Set(r.groups.map((g) => g.toLowerCase()))].sort(),
    role: r.role ?? 'USER',
    organisationIdentifier: r.organisation_identifier ?? r.employee_id,
  }));
}

export interface SnapshotSourceOptions {
  maxDisable: MaxDisable | undefined;
  reassertGroups?: boolean | undefined;
  /** The rows to plan instead of reading the snapshot: a held repair being approved plans what was reviewed. */
  rows?: readonly FeedRow[] | undefined;
}

export function snapshotSource(deps: { scope: OrgDb }, options: SnapshotSourceOptions): Source {
  return {
    kind: 'reconcile',
    label: RECONCILE_SOURCE,
    auditMark: null,
    desired: async () => {
      const rows = options.rows ?? (await snapshotRows(deps.scope));
      // Rows given (a held repair approved) were counted when it was held.
      const counts = options.rows === undefined ? await snapshotShrinkCounts(deps.scope) : undefined;
      return {
        rows,
        mode: 'delta',
        invalidEmployeeIds: new Set(),
        invalidEmails: new Set(),
        fileErrors: [],
        appliedScope: 'all',
        ...(counts !== undefined && counts.absentActive > 0 ? { listed: counts.listed } : {}),
      };
    },
    guard: { maxDisable: options.maxDisable, setting: '--max-disable', holds: 'plan' },
    checkSeats: true,
    adopt: false,
    createLookUp: 'now',
    reassertGroups: options.reassertGroups,
  };
}

/** A held repair decided: approving plans the reviewed rows again, not the snapshot as it is now; rejecting takes nothing back. */
export const heldRepair: HeldSource = {
  approve: async (deps, plan, approving) => {
    const run = await runPipeline(pipelineDeps(deps), snapshotSource(deps, { maxDisable: undefined, rows: plan.feed.rows }), { dryRun: false, force: false, locked: true, approving });
    if (run.plan.refused || !run.enqueued) return { applied: false, refused: run.plan.refused };
    return { applied: true, enqueued: run.enqueued.enqueued, waitingOn: run.enqueued.waitingOn, pending: run.enqueued.skippedEmployees };
  },
  reject: async () => ({ pending: [] }),
};
