import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../warehouse/database.ts';
import type { FeedRole, FeedRow } from '../../feed/types.ts';
import type { MaxDisable } from '../../plan/types.ts';
import type { Source } from '../types.ts';

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
 */

/** The snapshot `reconcile --fix` plans from. */
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

export interface SnapshotSourceOptions {
  maxDisable: MaxDisable | undefined;
  reassertGroups?: boolean | undefined;
  /** The rows to plan instead of reading the snapshot: a held repair being approved plans what was reviewed. */
  rows?: readonly FeedRow[] | undefined;
}

export function snapshotSource(deps: { db: Kysely<Database>; org: string }, options: SnapshotSourceOptions): Source {
  return {
    kind: 'reconcile',
    label: RECONCILE_SOURCE,
    auditMark: null,
    desired: async () => ({
      rows: options.rows ?? (await snapshotRows(deps.db, deps.org)),
      mode: 'delta',
      invalidEmployeeIds: new Set(),
      invalidEmails: new Set(),
      fileErrors: [],
      appliedScope: 'all',
    }),
    guard: { maxDisable: options.maxDisable, setting: '--max-disable', holds: 'plan' },
    checkSeats: true,
    adopt: false,
    createLookUp: 'now',
    reassertGroups: options.reassertGroups,
  };
}
