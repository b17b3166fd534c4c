import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';

type Db = Kysely<Database>;

/**
 * Every query names the organisations it reads (`orgs`: the page's scope): runs,
 * quarantine and unfinished windows are per organisation (0015).
 */

export interface RunRow {
  id: number;
  org: string;
  resource: string;
  mode: string | null;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  seconds: number | null;
  rows: number;
  /** HTTP requests to the platform (every attempt; 0 for runs before they were counted). */
  requests: number;
  pages: number;
  inserted: number;
  updated: number;
  unchanged: number;
  quarantined: number;
  removed: number;
  error: string | null;
  note: string | null;
}

const RUN_COLUMNS = sql`id, org, resource, mode, status, started_at, finished_at,
  extract(epoch from (finished_at - started_at))::float8 as seconds,
  (inserted + updated + unchanged)::int as rows, requests, pages, inserted, updated, unchanged, quarantined, removed, error, note`;

export interface RunFilter {
  resource?: string | undefined;
  status?: string | undefined;
  page: number;
  pageSize: number;
}

/** One page of runs, newest first; `hasMore` when an older page exists. Uses runs' (resource, started_at) order. */
export async function listRuns(db: Db, orgs: readonly string[], filter: RunFilter): Promise<{ runs: RunRow[]; hasMore: boolean }> {
  const conditions = [sql`org = any(${orgs}::text[])`];
  if (filter.resource) conditions.push(sql`resource = ${filter.resource}`);
  if (filter.status) conditions.push(sql`status = ${filter.status}`);
  const { rows } = await sql<RunRow>`
    select ${RUN_COLUMNS} from trainsync.runs where ${sql.join(conditions, sql` and `)}
     order by started_at desc, id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { runs: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}

/** The latest run of each resource of each organisation. */
export async function latestRuns(db: Db, orgs: readonly string[]): Promise<RunRow[]> {
  const { rows } = await sql<RunRow>`
    select distinct on (org, resource) ${RUN_COLUMNS} from trainsync.runs where org = any(${orgs}::text[])
     order by org, resource, started_at desc, id desc`.execute(db);
  return rows;
}

export async function resourcesWithRuns(db: Db, orgs: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ resource: string }>`select distinct resource from trainsync.runs where org = any(${orgs}::text[]) order by 1`.execute(db);
  return rows.map((r) => r.resource);
}

/** The last `limit` finished runs of a resource, oldest first: the chart's points. */
export async function runSeries(db: Db, orgs: readonly string[], resource: string, limit = 200): Promise<Array<{ t: number; seconds: number; rows: number; requests: number }>> {
  const { rows } = await sql<{ t: number; seconds: number; rows: number; requests: number }>`
    select * from (
      select extract(epoch from started_at)::float8 as t, extract(epoch from (finished_at - started_at))::float8 as seconds,
             (inserted + updated + unchanged)::int as rows, requests
        from trainsync.runs where org = any(${orgs}::text[]) and resource = ${resource} and finished_at is not null
       order by started_at desc limit ${limit}) last order by t`.execute(db);
  return rows;
}

/** A run by its id (ids are global), if it is one of `orgs`'. */
export async function getRun(db: Db, orgs: readonly string[], id: number): Promise<RunRow | undefined> {
  const { rows } = await sql<RunRow>`select ${RUN_COLUMNS} from trainsync.runs where id = ${id} and org = any(${orgs}::text[])`.execute(db);
  return rows[0];
}

export interface QuarantinedRow {
  id: number;
  resource: string;
  message: string;
  page: number | null;
  raw_text: string;
  quarantined_at: Date;
  times_seen: number;
}

export async function runQuarantine(db: Db, org: string, runId: number, limit = 100): Promise<QuarantinedRow[]> {
  const { rows } = await sql<QuarantinedRow>`
    select id, resource, message, page, left(raw::text, 400) as raw_text, quarantined_at, times_seen
      from trainsync.quarantine where org = ${org} and run_id = ${runId} order by id limit ${limit}`.execute(db);
  return rows;
}

export async function runUnfinishedWindows(db: Db, org: string, runId: number): Promise<Array<{ window_key: string; reason: string; recorded_at: Date }>> {
  const { rows } = await sql<{ window_key: string; reason: string; recorded_at: Date }>`
    select window_key, reason, recorded_at from trainsync.unfinished_windows where org = ${org} and run_id = ${runId} order by window_key`.execute(db);
  return rows;
}
