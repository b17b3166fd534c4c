/**
 * kysely row types of the tables the sync's resources write (sql/migrations is the source of
 * truth), beside their declarations (this folder: each names its table, and the generic
 * loaders of src/warehouse write it), and of the BI views over them (sql/views). They join
 * the warehouse's `Database` by declaration merging (below), so storage imports no wing.
 * Instants read back as `Date`; int8 as `number` (pool.ts); uuids as lower-case strings.
 */
import type { ColumnType } from 'kysely';
import type { Instant, SeenColumns } from '../../warehouse/column-types.ts';

export interface CoursesTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  course_id: string;
  name: string;
  pass_rate: number | null;
}

export interface CourseCategoriesTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  course_id: string;
  category_type: string;
  category_name: string;
}

export interface ResultsTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  result_id: string;
  user_id: string;
  course_id: string;
  multi_course_result_id: string | null;
  is_complete: boolean;
  date_completed: ColumnType<Date | null, Date | string | null, Date | string | null>;
  score: number | null;
  maximum_score: number | null;
  pass_rate: number | null;
  course_type: string | null;
  /** The record's fields unknown to this version; null when none. */
  extra: ColumnType<Record<string, unknown> | null, string | null, string | null>;
}

export interface ResultFilterAnswersTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  result_id: string;
  answer_id: string;
}

export interface ReportingFiltersTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  filter_id: string;
  name: string;
}

export interface ReportingFilterAnswersTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  answer_id: string;
  filter_id: string;
  answer: string;
}

export interface SeatUsageTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  observed_at: Instant;
  seats_in_use: number | null;
  total_seats: number | null;
  /** false when the organisation has no unlimited plan (NO_UNLIMITED_PLAN). */
  applicable: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface UsersTable extends SeenColumns {
  /** The organisation's slug (training.organisations). */
  org: string;
  user_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  role: string | null;
  organisation_identifier: string | null;
  has_access: boolean;
}

export interface ResultSightingsTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  run_id: number;
  result_id: string;
}

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

/** Read-only views in sql/views (select only). */
export interface ResultDetailsView {
  /** The organisation's slug (training.organisations). */
  org: string;
  result_id: string;
  user_id: string;
  course_id: string;
  course_name: string | null;
  multi_course_result_id: string | null;
  is_complete: boolean;
  date_completed: Date | null;
  score: number | null;
  maximum_score: number | null;
  effective_pass_rate: number | null;
  passed: boolean | null;
  course_type: string | null;
}

export interface CourseCompletionView {
  /** The organisation's slug (training.organisations). */
  org: string;
  course_id: string;
  course_name: string;
  pass_rate: number | null;
  learners: number;
  completed: number;
  passed: number;
  /** numeric: pg returns it as a string, e.g. '0.5000'. */
  completion_rate: string | null;
}

export interface ResultFilterDetailsView {
  /** The organisation's slug (training.organisations). */
  org: string;
  result_id: string;
  user_id: string;
  course_id: string;
  filter_id: string;
  filter_name: string;
  answer_id: string;
  answer: string;
}

export interface LatestSeatUsageView {
  /** The organisation's slug (training.organisations). */
  org: string;
  observed_at: Date;
  seats_in_use: number | null;
  total_seats: number | null;
  applicable: boolean;
}

export interface ResourceTables {
  'training.courses': CoursesTable;
  'training.course_categories': CourseCategoriesTable;
  'training.results': ResultsTable;
  'training.result_filter_answers': ResultFilterAnswersTable;
  'training.reporting_filters': ReportingFiltersTable;
  'training.reporting_filter_answers': ReportingFilterAnswersTable;
  'training.seat_usage': SeatUsageTable;
  'training.users': UsersTable;
  'training.groups': GroupsTable;
  'training.group_courses': GroupCoursesTable;
  'trainsync.result_sightings': ResultSightingsTable;
  'training.result_details': ResultDetailsView;
  'training.course_completion': CourseCompletionView;
  'training.result_filter_details': ResultFilterDetailsView;
  'training.latest_seat_usage': LatestSeatUsageView;
}

declare module '../../warehouse/database.ts' {
  interface Database extends ResourceTables {}
}
