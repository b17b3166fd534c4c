/**
 * kysely row types of every warehouse table, keyed `schema.table`.
 *
 * The SQL in sql/migrations is the source of truth; these types follow it. Instants
 * read back as `Date` (millisecond precision in JS; Postgres keeps microseconds).
 * int8 columns read back as `number` because createPool installs an int8 parser
 * (see pool.ts). uuid columns are lower-case strings.
 */
import type { OrganisationTables } from './organisation-tables.ts';
import type { ColumnType, Generated } from 'kysely';
import type { GeneratedInstant, Instant, SeenColumns } from './column-types.ts';
import type { EmployeeTables } from './employee-tables.ts';
import type { GroupTables } from './group-tables.ts';
import type { ProvisioningTables } from './provisioning-tables.ts';
import type { WebhookTables } from './webhook-tables.ts';
import type { ScimTables } from './scim-tables.ts';

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

export type RunStatus = 'running' | 'succeeded' | 'incomplete' | 'failed' | 'cancelled';

export interface RunsTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  id: Generated<number>;
  resource: string;
  job_id: string | null;
  mode: string | null;
  params: ColumnType<unknown, string | undefined, string>;
  started_at: GeneratedInstant;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  status: ColumnType<RunStatus, RunStatus | undefined, RunStatus>;
  pages: ColumnType<number, number | undefined, number>;
  inserted: ColumnType<number, number | undefined, number>;
  updated: ColumnType<number, number | undefined, number>;
  unchanged: ColumnType<number, number | undefined, number>;
  quarantined: ColumnType<number, number | undefined, number>;
  removed: ColumnType<number, number | undefined, number>;
  requests: ColumnType<number, number | undefined, number>;
  error: string | null;
  note: string | null;
}

export interface CheckpointsTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  key: string;
  value: ColumnType<unknown, string, string>;
  run_id: number | null;
  updated_at: GeneratedInstant;
}

export interface WatermarksTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  resource: string;
  value: string;
  updated_at: GeneratedInstant;
}

export interface QuarantineTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  id: Generated<number>;
  run_id: number | null;
  resource: string;
  raw: ColumnType<unknown, string, string>;
  message: string;
  page: number | null;
  quarantined_at: GeneratedInstant;
  last_seen_at: GeneratedInstant;
  times_seen: ColumnType<number, number | undefined, number>;
}

export interface UnfinishedWindowsTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  resource: string;
  window_key: string;
  reason: string;
  run_id: number | null;
  recorded_at: GeneratedInstant;
}

export interface ResultSightingsTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  run_id: number;
  result_id: string;
}

/** Each organisation's schedule of a synced resource, as the worker that registers the schedules wrote it (0024). */
export interface SyncSchedulesTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  resource: string;
  /** The cron line (UTC) registered, spread included. */
  pattern: string;
  /** The longest gap between two fires, in seconds; null when it fires less than twice in 400 days. */
  every_seconds: number | null;
  updated_at: GeneratedInstant;
}

export interface SchemaMigrationsTable {
  name: string;
  checksum: string;
  applied_at: GeneratedInstant;
}

export interface Database extends ProvisioningTables, GroupTables, WebhookTables, EmployeeTables, ScimTables, OrganisationTables {
  'training.courses': CoursesTable;
  'training.course_categories': CourseCategoriesTable;
  'training.results': ResultsTable;
  'training.result_filter_answers': ResultFilterAnswersTable;
  'training.reporting_filters': ReportingFiltersTable;
  'training.reporting_filter_answers': ReportingFilterAnswersTable;
  'training.seat_usage': SeatUsageTable;
  'training.users': UsersTable;
  'training.result_details': ResultDetailsView;
  'training.course_completion': CourseCompletionView;
  'training.result_filter_details': ResultFilterDetailsView;
  'training.latest_seat_usage': LatestSeatUsageView;
  'trainsync.runs': RunsTable;
  'trainsync.checkpoints': CheckpointsTable;
  'trainsync.watermarks': WatermarksTable;
  'trainsync.quarantine': QuarantineTable;
  'trainsync.result_sightings': ResultSightingsTable;
  'trainsync.unfinished_windows': UnfinishedWindowsTable;
  'trainsync.sync_schedules': SyncSchedulesTable;
  'trainsync.schema_migrations': SchemaMigrationsTable;
}
