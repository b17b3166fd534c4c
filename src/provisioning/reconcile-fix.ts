import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { Database } from '../warehouse/database.ts';
import { loadAppliedEmployees } from './apply/applied-state.ts';
import { enqueuePlan, waitForActions, type ApplyResult, type EnqueueResult } from './apply/enqueue.ts';
import type { FeedRole, FeedRow } from './feed/types.ts';
import { planDelta } from './plan/plan.ts';
import type { MaxDisable, Plan } from './plan/types.ts';
import { loadLeaverSince, readPlatformView } from './platform-view.ts';
import { DEFAULT_DRIFT_SETTINGS, freeSeats, provisionLock, type ProvisionDeps, type SeatsInfo } from './provision-feed.ts';

/**
 * `reconcile --fix`: drift repair without a new feed. The last feed snapshot
 * (`training.employees`, as `provision` or `load-feed` left it) is planned again against
 * the platform's current accounts, for the employees trainsync has applied something
 * to (`trainsync.identities`), with the guards, audit and action jobs of `provision`.
 *
 * The snapshot does not keep groups, role or organisation identifier: those come from
 * the applied state, so memberships are re-added only when an account is created again
 * (or with `reassertGroups`). Employees the snapshot does not list are left alone (the
 * plan is a delta), and nobody is created who was never applied: joiners need a feed.
 */

export interface ReconcileFixOptions {
  dryRun: boolean;
  force: boolean;
  maxDisable?: MaxDisable | undefined;
  /** Add again every membership on record (the API cannot read them); one write each. */
  reassertGroups?: boolean | undefined;
  /** Wait for the actions (the CLI); the scheduled job only enqueues them. */
  wait: boolean;
  onPlan?: (result: ReconcileFixResult) => void;
  onProgress?: (finished: number, total: number) => void;
}

export interface ReconcileFixResult {
  /** Employees of the snapshot with an applied identity: what was planned. */
  employees: number;
  plan: Plan;
  seats: SeatsInfo;
  platformRequests: number;
  /** Set when the plan was enqueued (not a dry run, not refused). */
  applied?: ApplyResult;
}

/** The worker's job that runs `reconcile --fix` on a schedule (jobs/reconcile-fix.ts). */
export const RECONCILE_FIX_JOB = 'reconcile-fix';

/** What the scheduled job returns. */
export const reconcileFixSummarySchema = z.object({
  employees: z.number(),
  actions: z.number(),
  repairs: z.number(),
  enqueued: z.number(),
  platformRequests: z.number(),
});
export type ReconcileFixSummary = z.output<typeof reconcileFixSummarySchema>;

/** The snapshot where `reconcile --fix` plans from. */
export const RECONCILE_SOURCE = 'training.employees';

interface SnapshotRow {
  employee_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  status: 'active' | 'inactive';
  removed_at: Date | null;
  identity_email: string;
  groups: string[];
  role: FeedRole | null;
  organisation_identifier: string | null;
}

/** One organisation's snapshot employees that have an identity, as feed rows (a removed employee is inactive). */
export async function snapshotRows(db: Kysely<Database>, org: string): Promise<FeedRow[]> {
  const { rows } = await sql<SnapshotRow>`
    select e.employee_id, e.email, e.first_name, e.last_name, e.status, e.removed_at,
           i.email as identity_email, i.groups::text[] as groups, i.role, i.organisation_identifier
      from training.employees e
      join trainsync.identities i on i.org = e.org and i.employee_id = e.employee_id
     where e.org = ${org}
     order by e.employee_id`.execute(db);
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

export async function reconcileFix(deps: ProvisionDeps, options: ReconcileFixOptions): Promise<ReconcileFixResult> {
  const drift = deps.drift ?? DEFAULT_DRIFT_SETTINGS;
  const planAndEnqueue = async (): Promise<{ planned: ReconcileFixResult; enqueued?: EnqueueResult }> => {
    const rows = await snapshotRows(deps.db, deps.org);
    const applied = await loadAppliedEmployees(deps.db, deps.org);
    const platform = await readPlatformView(deps, { freshnessMinutes: drift.freshnessMinutes });
    const seats = await freeSeats(deps.platform);
    const plan = planDelta({
      rows,
      applied,
      options: {
        maxDisable: options.maxDisable,
        force: options.force,
        freeSeats: seats.free,
        accessRemoved: drift.accessRemoved,
        reassertGroups: options.reassertGroups,
      },
      file: RECONCILE_SOURCE,
      platform: platform.view,
      platformNote: platform.note,
      leaverSince: await loadLeaverSince(deps.db, deps.org),
    });
    const planned: ReconcileFixResult = { employees: rows.length, plan, seats, platformRequests: platform.requests };
    options.onPlan?.(planned);
    if (options.dryRun || plan.refused !== undefined) return { planned };
    return { planned, enqueued: await enqueuePlan(deps, plan, null) };
  };
  const { planned, enqueued } = options.dryRun ? await planAndEnqueue() : await withAdvisoryLock(deps.withPgClient, provisionLock(deps.org), planAndEnqueue);
  if (enqueued === undefined) return planned;
  const ids = [...enqueued.enqueued, ...enqueued.waitingOn];
  const audit = options.wait ? await waitForActions(deps, ids, options.onProgress) : [];
  return { ...planned, applied: { ...enqueued, audit } };
}
