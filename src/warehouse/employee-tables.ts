/**
 * kysely row types of the employee tables in schema `training`
 * (sql/migrations/0005_employees.sql is the source of truth; written by load-employees.ts).
 */
import type { ColumnType } from 'kysely';
import type { Instant, NullableInstant } from './column-types.ts';

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

export interface EmployeeTables {
  'training.employees': EmployeesTable;
  'training.employee_history': EmployeeHistoryTable;
}
