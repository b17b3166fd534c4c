/**
 * kysely row types of the sync's state in schema `trainsync` (sql/migrations is the source of
 * truth), beside their stores (runs-store.ts, sync-state.ts, schedules-store.ts). They join the
 * warehouse's `Database` by declaration merging (below), so storage imports no wing.
 */
import type { ColumnType, Generated } from 'kysely';
import type { GeneratedInstant } from '../warehouse/column-types.ts';

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

export interface SyncStateTables {
  'trainsync.runs': RunsTable;
  'trainsync.checkpoints': CheckpointsTable;
  'trainsync.watermarks': WatermarksTable;
  'trainsync.quarantine': QuarantineTable;
  'trainsync.unfinished_windows': UnfinishedWindowsTable;
  'trainsync.sync_schedules': SyncSchedulesTable;
}

declare module '../warehouse/database.ts' {
  interface Database extends SyncStateTables {}
}
