/**
 * kysely row types of the HR snapshot in schema `training` (sql/migrations/0005_employees.sql
 * is the source of truth), beside its store (employees-store.ts), and of the views over it
 * that provisioning and the console read (sql/views/60, 70). They join the warehouse's
 * `Database` by declaration merging (below), so storage imports no wing.
 */
import type { ColumnType } from 'kysely';
import type { Instant, NullableInstant } from '../warehouse/column-types.ts';

/** jsonb object: parsed on read; written as a JSON string (default `{}`). */
type Attributes = ColumnType<Record<string, unknown>, string | undefined, string>;

export type EmployeeStatus = 'active' | 'inactive';

/** One row per employee any feed listed. */
export interface EmployeesTable {
  /** The organisation's slug (training.organisations); the key is (org, employee_id). */
  org: string;
  employee_id: string;
  /** Lower case. */
  email: string;
  first_name: string | null;
  last_name: string | null;
  status: EmployeeStatus;
  attributes: Attributes;
  user_id: string | null;
  first_seen_at: Instant;
  last_seen_at: Instant;
  /** A full feed no longer lists the employee. */
  removed_at: NullableInstant;
  updated_at: Instant;
}

/** One row per version of an employee; valid_to null on the current one. */
export interface EmployeeHistoryTable {
  org: string;
  employee_id: string;
  valid_from: Instant;
  valid_to: NullableInstant;
  status: EmployeeStatus;
  email: string;
  first_name: string | null;
  last_name: string | null;
  attributes: Attributes;
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

export interface EmployeeTables {
  'training.employees': EmployeesTable;
  'training.employee_history': EmployeeHistoryTable;
  'training.assignment_status': AssignmentStatusView;
  'training.hr_reconciliation': HrReconciliationView;
}

declare module '../warehouse/database.ts' {
  interface Database extends EmployeeTables {}
}
