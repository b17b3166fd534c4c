import { sql } from 'kysely';
import type { HrReconciliationView, ReconciliationKind } from '../../provisioning/index.ts';
import type { OrgDb } from '../../warehouse/scope.ts';


export interface StatusByGroup {
  grp: string;
  status: string;
  n: number;
}

const ATTRIBUTES = ['department', 'location'] as const;
export type GroupBy = 'course' | (typeof ATTRIBUTES)[number];

export function parseGroupBy(value: string | undefined): GroupBy {
  return value === 'department' || value === 'location' ? value : 'course';
}

/** Assignment status counts of one organisation's current active employees, by course or by an HR attribute. */
export async function assignmentStatusBy({ db, org }: OrgDb, by: GroupBy): Promise<StatusByGroup[]> {
  const key = by === 'course' ? sql`course_name` : sql`coalesce(attributes->>${by}, '(none)')`;
  const { rows } = await sql<StatusByGroup>`
    select ${key} as grp, status, count(*)::int as n from training.assignment_status
     where org = ${org} and employee_status = 'active' group by 1, 2 order by 1, 2 limit 2000`.execute(db);
  return rows;
}

/** The assignments behind one cell of the chart (a group and a status): who they are. */
export interface AssignmentRow {
  employee_id: string | null;
  email: string | null;
  course_name: string | null;
  status: string;
}

/** One page of one organisation's active assignments in one group (course or attribute value) and status. */
export async function assignmentsIn({ db, org }: OrgDb, by: GroupBy, group: string, status: string, page: number, pageSize: number): Promise<{ rows: AssignmentRow[]; hasMore: boolean }> {
  const key = by === 'course' ? sql`course_name` : sql`coalesce(attributes->>${by}, '(none)')`;
  const { rows } = await sql<AssignmentRow>`
    select employee_id, email, course_name, status from training.assignment_status
     where org = ${org} and employee_status = 'active' and ${key} = ${group} and status = ${status}
     order by email nulls last, employee_id, course_name limit ${pageSize + 1} offset ${(page - 1) * pageSize}`.execute(db);
  return { rows: rows.slice(0, pageSize), hasMore: rows.length > pageSize };
}

/** One page of one kind of one organisation's discrepancies from `training.hr_reconciliation`, in the report's order. */
export async function discrepancies({ db, org }: OrgDb, kind: ReconciliationKind, page: number, pageSize: number): Promise<{ rows: HrReconciliationView[]; hasMore: boolean }> {
  const { rows } = await sql<HrReconciliationView>`
    select kind, employee_id, email, user_id, detail from training.hr_reconciliation where org = ${org} and kind = ${kind}
     order by email nulls last, employee_id, user_id limit ${pageSize + 1} offset ${(page - 1) * pageSize}`.execute(db);
  return { rows: rows.slice(0, pageSize), hasMore: rows.length > pageSize };
}
