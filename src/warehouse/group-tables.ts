/**
 * kysely row types of the group tables and the BI views over them and the employees
 * (sql/migrations/0006_groups.sql and sql/views are the source of truth).
 */
import type { ColumnType } from 'kysely';
import type { NullableInstant, SeenColumns } from './column-types.ts';


export interface GroupsTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  group_id: string;
  name: string;
}

/** Replaced with each listing of its group. */
export interface GroupCoursesTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  group_id: string;
  course_id: string;
  /** The name the group listing gave the course. */
  course_name: string | null;
}

/** Memberships trainsync applied; a removal sets removed_at. */
export interface GroupMembersTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  group_id: string;
  user_id: string;
  employee_id: string;
  since: ColumnType<Date, Date | string, Date | string>;
  removed_at: NullableInstant;
}

export type AssignmentState = 'passed' | 'completed' | 'failed' | 'in_progress' | 'not_started';

/** training.assignment_status: current employee with an account × course assigned through a group. */
export interface AssignmentStatusView {
  employee_id: string;
  email: string;
  attributes: unknown;
  user_id: string;
  course_id: string;
  course_name: string | null;
  assigned_since: Date;
  status: AssignmentState;
  completed_at: Date | null;
  score: number | null;
  maximum_score: number | null;
  result_id: string | null;
  /** The organisation (last: views only append columns). */
  org: string;
}

export type ReconciliationKind = 'active_without_account' | 'leaver_with_access' | 'account_without_employee' | 'pending_action';

/** training.hr_reconciliation: one row per discrepancy between HR and the platform. */
export interface HrReconciliationView {
  kind: ReconciliationKind;
  employee_id: string | null;
  email: string | null;
  user_id: string | null;
  detail: string;
  /** The organisation whose employees and accounts disagree. */
  org: string;
}

export interface GroupTables {
  'training.groups': GroupsTable;
  'training.group_courses': GroupCoursesTable;
  'training.group_members': GroupMembersTable;
  'training.assignment_status': AssignmentStatusView;
  'training.hr_reconciliation': HrReconciliationView;
}
