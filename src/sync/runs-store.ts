/**
 * The store of `trainsync.runs`: one row per execution of a sync job, with its counts.
 * Every statement that names the table is here (test/table-owners.test.ts keeps it so): the
 * sync engine records runs, `status` and the console read them, provisioning asks when the
 * last clean users sync began. Checkpoints, watermarks, unfinished windows and quarantined
 * records stay in sync-state.ts.
 *
 * Functions that name runs by resource or job take the organisation's handle first
 * (OrgDb: the caller's scope, or the `tx` of its transaction, so counts commit with their
 * rows) and read the organisation from it; functions given a run id take Kysely: run ids
 * are one sequence across organisations, so an id names one organisation's run. The
 * console's reads take the organisations of its page (`orgs`).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import type { RunStatus } from './tables.ts';
import { jsonbText } from '../warehouse/jsonb-text.ts';
import type { OrgDb } from '../warehouse/scope.ts';
import { quarantinedInRun } from './sync-state.ts';

type Db = Kysely<Database>;

const COUNTER_NAMES = ['pages', 'inserted', 'updated', 'unchanged', 'quarantined', 'removed', 'requests'] as const;

/** Counters of a run. */
export type RunCounts = Record<(typeof COUNTER_NAMES)[number], number>;

/** Zero counts, to sum into. */
export function emptyRunCounts(): RunCounts {
  return { pages: 0, inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0, requests: 0 };
}

export interface StartRunInput {
  resource: string;
  /** e.g. 'incremental' or 'full'. */
  mode?: string;
  /** The job's parameters as given (window, since/until…); stored as jsonb. */
  params?: unknown;
  /** The BullMQ job id, to find the job from the run. */
  jobId?: string;
}

/**
 * Records a run as `running` and returns its id. Times are the wall clock's, not the
 * transaction's: a run's rows may commit in a transaction opened long after it began.
 */
export async function startRun({ db, org }: OrgDb, input: StartRunInput): Promise<number> {
  const row = await db
    .insertInto('trainsync.runs')
    .values({ org, resource: input.resource, mode: input.mode ?? null, params: jsonbText(input.params ?? {}), job_id: input.jobId ?? null, started_at: sql<Date>`clock_timestamp()` })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * startRun, and closeAbandonedRuns for the new run, in one statement: the run's id and how
 * many runs of its resource still marked running it closed as failed (call it only while
 * holding the resource's exclusive lock). The update does not see the row the insert adds
 * (one snapshot), so the new run is never among them.
 */
export async function startRunClosingAbandoned({ db, org }: OrgDb, input: StartRunInput): Promise<{ id: number; abandoned: number }> {
  const { rows } = await sql<{ id: number; abandoned: number }>`
    with started as (
      insert into trainsync.runs (org, resource, mode, params, job_id, started_at)
      values (${org}, ${input.resource}, ${input.mode ?? null}, ${jsonbText(input.params ?? {})}::jsonb, ${input.jobId ?? null}, clock_timestamp())
      returning id
    ), closed as (
      update trainsync.runs set status = 'failed', finished_at = clock_timestamp(), error = ${ABANDONED}
       where org = ${org} and resource = ${input.resource} and status = 'running'
      returning 1
    )
    select (select id from started) as id, (select count(*) from closed)::int as abandoned`.execute(db);
  return rows[0]!;
}

export interface FinishRunInput extends Partial<RunCounts> {
  status: Exclude<RunStatus, 'running'>;
  error?: string | undefined;
  /** e.g. 'not applicable' (no unlimited plan) or 'not available'. */
  note?: string | undefined;
  /** Also adds the distinct records this run quarantined (quarantinedInRun: a record read again in the run counts once), counted by the closing statement itself. */
  quarantinedOfRun?: boolean;
}

/**
 * Adds counts to a running run, e.g. per batch in the same transaction as the
 * batch's rows and checkpoint, so a retried job's totals stay right.
 */
export async function addRunCounts(db: Db, runId: number, counts: Partial<RunCounts>): Promise<void> {
  const set = counterSets(counts);
  if (Object.keys(set).length === 0) return;
  await db.updateTable('trainsync.runs').set(set).where('id', '=', runId).execute();
}

/** `counter = counter + n` for each counter `counts` gives (none: nothing to set). */
function counterSets(counts: Partial<RunCounts>): Record<string, RawBuilder<number>> {
  return Object.fromEntries(COUNTER_NAMES.filter((c) => counts[c] !== undefined && counts[c] !== 0).map((c) => [c, sql<number>`${sql.ref(c)} + ${counts[c]!}`]));
}

/**
 * Adds counts to a run and reads its totals, status and note back: the end of an attempt
 * (its requests) and the summary's figures in one statement.
 */
export async function addRunCountsAndTotals(db: Db, runId: number, counts: Partial<RunCounts>): Promise<RunCounts & { status: RunStatus; note: string | null }> {
  const set = counterSets(counts);
  // An update with nothing to set is refused by Kysely: read the row instead.
  if (Object.keys(set).length === 0) return runTotals(db, runId);
  return db.updateTable('trainsync.runs').set(set).where('id', '=', runId).returning([...COUNTER_NAMES, 'status', 'note']).executeTakeFirstOrThrow();
}

/**
 * Closes a run: status, finished_at, error and note, and the counts given (added to
 * what addRunCounts recorded), in one statement.
 */
export async function finishRun(db: Db, runId: number, input: FinishRunInput): Promise<void> {
  await db
    .updateTable('trainsync.runs')
    .set(closingSets(runId, input))
    .where('id', '=', runId)
    .execute();
}

/**
 * Closes a run as `finishRun` does and reads its totals, status and note back: the
 * summary's figures from the closing statement itself, so a run whose attempt makes no
 * request after it needs no statement of its own to read them (`closeRun`, run.ts).
 */
export async function finishRunWithTotals(db: Db, runId: number, input: FinishRunInput): Promise<RunCounts & { status: RunStatus; note: string | null }> {
  return db
    .updateTable('trainsync.runs')
    .set(closingSets(runId, input))
    .where('id', '=', runId)
    .returning([...COUNTER_NAMES, 'status', 'note'])
    .executeTakeFirstOrThrow();
}

/** The closing update's columns: the counts added, the status, when, error and note. */
function closingSets(runId: number, input: FinishRunInput) {
  const counters = counterSets(input);
  if (input.quarantinedOfRun) {
    counters.quarantined = sql<number>`${sql.ref('quarantined')} + ${input.quarantined ?? 0} + ${quarantinedInRun(runId)}`;
  }
  return { ...counters, status: input.status, finished_at: sql<Date>`clock_timestamp()`, error: input.error ?? null, note: input.note ?? null };
}

const ABANDONED = 'cut off before it finished (its worker stopped or lost the database); a later run took over';

/**
 * Marks the resource's other runs still `running` as failed (call it only while holding
 * the resource's exclusive lock); returns how many.
 */
export async function closeAbandonedRuns({ db, org }: OrgDb, resource: string, exceptRunId: number): Promise<number> {
  const result = await db
    .updateTable('trainsync.runs')
    .set({ status: 'failed', finished_at: sql<Date>`clock_timestamp()`, error: ABANDONED })
    .where('org', '=', org)
    .where('resource', '=', resource)
    .where('status', '=', 'running')
    .where('id', '<>', exceptRunId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Closes the runs a removed job left running as cancelled, with why; returns how many. */
export async function cancelRunsOfJob({ db, org }: OrgDb, jobId: string, reason: string): Promise<number> {
  const result = await db
    .updateTable('trainsync.runs')
    .set({ status: 'cancelled', finished_at: sql<Date>`clock_timestamp()`, error: reason })
    .where('org', '=', org)
    .where('job_id', '=', jobId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A run's counters, status and note as recorded (its totals over every attempt). */
export async function runTotals(db: Db, runId: number): Promise<RunCounts & { status: RunStatus; note: string | null }> {
  return db.selectFrom('trainsync.runs').select([...COUNTER_NAMES, 'status', 'note']).where('id', '=', runId).executeTakeFirstOrThrow();
}


export interface RunSummary extends RunCounts {
  id: number;
  resource: string;
  jobId: string | null;
  mode: string | null;
  status: RunStatus;
  startedAt: Date;
  finishedAt: Date | null;
  error: string | null;
  note: string | null;
}

/** The organisation's latest run of each resource, by resource name (for `status`). */
export async function lastRuns({ db, org }: OrgDb): Promise<RunSummary[]> {
  const rows = await db
    .selectFrom('trainsync.runs')
    .distinctOn('resource')
    .select(['id', 'resource', 'job_id', 'mode', 'status', 'started_at', 'finished_at', ...COUNTER_NAMES, 'error', 'note'])
    .where('org', '=', org)
    .orderBy('resource')
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(runSummaryOf);
}


/** A runs row as the summaries give it. */
function runSummaryOf(r: {
  id: number; resource: string; job_id: string | null; mode: string | null; status: RunStatus; started_at: Date; finished_at: Date | null;
  pages: number; inserted: number; updated: number; unchanged: number; quarantined: number; removed: number; requests: number; error: string | null; note: string | null;
}): RunSummary {
  return {
    id: r.id,
    resource: r.resource,
    jobId: r.job_id,
    mode: r.mode,
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    pages: r.pages,
    inserted: r.inserted,
    updated: r.updated,
    unchanged: r.unchanged,
    quarantined: r.quarantined,
    removed: r.removed,
    requests: r.requests,
    error: r.error,
    note: r.note,
  };
}

/**
 * The last run per resource of each organisation of `orgs` (as `lastRuns` gives one's), with
 * its `org`, in `orgs`' order then by resource: one statement for all of them, each one probe
 * of the index (org, resource, started_at desc) per organisation and resource (`status`).
 */
export async function lastRunsOf(db: Db, orgs: readonly string[], resources: readonly string[]): Promise<Array<RunSummary & { org: string }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{
    org: string; id: number; resource: string; job_id: string | null; mode: string | null; status: RunStatus; started_at: Date; finished_at: Date | null;
    pages: number; inserted: number; updated: number; unchanged: number; quarantined: number; removed: number; requests: number; error: string | null; note: string | null;
  }>`
    select l.* from unnest(${[...orgs]}::text[]) with ordinality as c(slug, n)
    cross join unnest(${[...resources]}::text[]) as res(resource)
    join lateral (
      select r.org, r.id, r.resource, r.job_id, r.mode, r.status, r.started_at, r.finished_at, r.pages, r.inserted, r.updated, r.unchanged,
        r.quarantined, r.removed, r.requests, r.error, r.note
      from trainsync.runs r where r.org = c.slug and r.resource = res.resource order by r.started_at desc, r.id desc limit 1
    ) l on true
    order by c.n, l.resource`.execute(db);
  return result.rows.map((r) => ({ org: r.org, ...runSummaryOf(r) }));
}

/** The statuses a run ends with that leave its resource's data read (incomplete: read, with windows left for the next run). */
const GOOD: readonly RunStatus[] = ['succeeded', 'incomplete'];

/** One resource's last run in an organisation, and when it last ended well. */
export interface LastRunOutcome {
  org: string;
  resource: string;
  status: RunStatus;
  /** When it ended (when it started, while running). */
  at: Date;
  error: string | null;
  /** When the newest succeeded or incomplete run of the resource ended; null when none did. */
  goodAt: Date | null;
}

/**
 * Each organisation's last run of each resource of `resources` it ever ran, and when the
 * resource last ended well: one statement for all of `orgs`, in their order then by resource.
 * Each is two probes of the index (org, resource, started_at desc), not a scan of every run
 * (the summary of `status` over many organisations).
 */
export async function lastRunOutcomesOf(db: Db, orgs: readonly string[], resources: readonly string[]): Promise<LastRunOutcome[]> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; resource: string; status: RunStatus; at: Date; error: string | null; good_at: Date | null }>`
    select c.slug as org, l.resource, l.status, l.at, l.error,
      (select g.finished_at from trainsync.runs g
        where g.org = c.slug and g.resource = l.resource and g.status = any(${[...GOOD]}::text[])
        order by g.started_at desc limit 1) as good_at
    from unnest(${[...orgs]}::text[]) with ordinality as c(slug, n)
    cross join unnest(${[...resources]}::text[]) as res(resource)
    join lateral (
      select r.resource, r.status, coalesce(r.finished_at, r.started_at) as at, r.error from trainsync.runs r
      where r.org = c.slug and r.resource = res.resource order by r.started_at desc, r.id desc limit 1
    ) l on true
    order by c.n, l.resource`.execute(db);
  return rows.map((r) => ({ org: r.org, resource: r.resource, status: r.status, at: r.at, error: r.error, goodAt: r.good_at }));
}

/**
 * The start of the organisation's latest run of `resource` that succeeded with every record
 * read (no note, nothing quarantined), if it began within the last `withinMinutes` and after
 * `after` (a subquery of the caller's statement, null for never: provisioning's last write).
 */
export async function latestCleanRunStart({ db, org }: OrgDb, resource: string, options: { withinMinutes: number; after: RawBuilder<Date | null> }): Promise<Date | undefined> {
  const { rows } = await sql<{ started_at: Date }>`
    select r.started_at
      from trainsync.runs r
     where r.org = ${org} and r.resource = ${resource} and r.status = 'succeeded' and r.note is null and r.quarantined = 0
       and r.started_at >= now() - make_interval(mins => ${options.withinMinutes})
       and r.started_at > coalesce(${options.after}, '-infinity')
     order by r.started_at desc
     limit 1`.execute(db);
  return rows[0]?.started_at;
}

/**
 * The console's row of a run: one job's attempts taken together (BullMQ retries a failed
 * attempt, and each attempt that is not resumed records its own row). Its id is the first
 * attempt's; status, error and note the last attempt's; counts summed over every attempt;
 * duration from the first start to the last finish; rows is inserted + updated + unchanged.
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
  /** How many attempts the job made (rows of trainsync.runs taken together). */
  attempts: number;
  /** The ids of those rows, first attempt first. */
  attempt_ids: number[];
}

/** One attempt of a run, as the run's page lists them. */
export interface AttemptRow {
  id: number;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  seconds: number | null;
  error: string | null;
}

/**
 * The runs of `orgs` (one resource's, when given), each job's attempts as one: the rows of a
 * resource in start order, a new run starting at each row whose job id is missing or differs
 * from the row before (a resource's syncs never overlap in an organisation, so one job's
 * attempts follow each other; a job id reused after its queue was emptied starts a new run).
 */
function groupedRuns(orgs: readonly string[], resource: string | undefined): RawBuilder<unknown> {
  const where = [sql`org = any(${orgs}::text[])`];
  if (resource !== undefined) where.push(sql`resource = ${resource}`);
  return sql`
    with marked as (
      select r.*, case when r.job_id is not null and r.job_id = lag(r.job_id) over w then 0 else 1 end as starts
        from trainsync.runs r where ${sql.join(where, sql` and `)}
      window w as (partition by org, resource order by started_at, id)
    ), numbered as (
      select *, sum(starts) over (partition by org, resource order by started_at, id) as n from marked
    ), grouped as (
      select min(id) as id, org, resource,
             (array_agg(mode order by started_at, id))[1] as mode,
             (array_agg(status order by started_at desc, id desc))[1] as status,
             min(started_at) as started_at,
             (array_agg(finished_at order by started_at desc, id desc))[1] as finished_at,
             sum(pages)::int as pages, sum(inserted)::int as inserted, sum(updated)::int as updated, sum(unchanged)::int as unchanged,
             sum(quarantined)::int as quarantined, sum(removed)::int as removed, sum(requests)::int as requests,
             (array_agg(error order by started_at desc, id desc))[1] as error,
             (array_agg(note order by started_at desc, id desc))[1] as note,
             count(*)::int as attempts,
             array_agg(id::int order by started_at, id) as attempt_ids
        from numbered group by org, resource, n
    )
    select id::int as id, org, resource, mode, status, started_at, finished_at,
           extract(epoch from (finished_at - started_at))::float8 as seconds,
           (inserted + updated + unchanged)::int as rows, requests, pages, inserted, updated, unchanged, quarantined, removed, error, note,
           attempts, attempt_ids
      from grouped`;
}

export interface RunFilter {
  resource?: string | undefined;
  status?: string | undefined;
  /** A UTC day (YYYY-MM-DD): runs started on it. */
  day?: string | undefined;
  page: number;
  pageSize: number;
}

/** One page of the runs of `orgs` (each job's attempts as one), newest first; `hasMore` when an older page exists. */
export async function listRuns(db: Db, orgs: readonly string[], filter: RunFilter): Promise<{ runs: RunRow[]; hasMore: boolean }> {
  const conditions = [sql`true`];
  if (filter.status) conditions.push(sql`status = ${filter.status}`);
  if (filter.day) conditions.push(sql`started_at >= ${filter.day}::date::timestamp at time zone 'UTC' and started_at < (${filter.day}::date + 1)::timestamp at time zone 'UTC'`);
  const { rows } = await sql<RunRow>`
    select * from (${groupedRuns(orgs, filter.resource)}) runs where ${sql.join(conditions, sql` and `)}
     order by started_at desc, id desc limit ${filter.pageSize + 1} offset ${(filter.page - 1) * filter.pageSize}`.execute(db);
  return { runs: rows.slice(0, filter.pageSize), hasMore: rows.length > filter.pageSize };
}

const RUN_COLUMNS = sql`id, org, resource, mode, status, started_at, finished_at,
  extract(epoch from (finished_at - started_at))::float8 as seconds,
  (inserted + updated + unchanged)::int as rows, requests, pages, inserted, updated, unchanged, quarantined, removed, error, note,
  1 as attempts, array[id::int] as attempt_ids`;

/** The latest run of each resource of each of `orgs` (the console's overview; `lastRuns` is status's). */
export async function latestRuns(db: Db, orgs: readonly string[]): Promise<RunRow[]> {
  const { rows } = await sql<RunRow>`
    select distinct on (org, resource) ${RUN_COLUMNS} from trainsync.runs where org = any(${orgs}::text[])
     order by org, resource, started_at desc, id desc`.execute(db);
  return rows;
}

/** The resources `orgs` have runs of, by name. */
export async function resourcesWithRuns(db: Db, orgs: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ resource: string }>`select distinct resource from trainsync.runs where org = any(${orgs}::text[]) order by 1`.execute(db);
  return rows.map((r) => r.resource);
}

/** A point of the runs chart: one finished run, with what tells unlike runs apart (its status and mode). */
export interface RunPoint {
  t: number;
  seconds: number;
  rows: number;
  requests: number;
  status: string;
  mode: string | null;
}

/** The last `limit` finished runs of a resource (each job's attempts as one), oldest first: the chart's points. */
export async function runSeries(db: Db, orgs: readonly string[], resource: string, limit = 200): Promise<RunPoint[]> {
  const { rows } = await sql<RunPoint>`
    select * from (
      select extract(epoch from started_at)::float8 as t, seconds, rows, requests, status, mode
        from (${groupedRuns(orgs, resource)}) runs where finished_at is not null and status <> 'running'
       order by started_at desc limit ${limit}) last order by t`.execute(db);
  return rows;
}

/** The run (its job's attempts as one) one of whose attempts has this id (ids are global), if it is one of `orgs`'; with its attempts. */
export async function getRun(db: Db, orgs: readonly string[], id: number): Promise<(RunRow & { attemptRows: AttemptRow[] }) | undefined> {
  const { rows: found } = await sql<{ org: string; resource: string }>`select org, resource from trainsync.runs where id = ${id} and org = any(${orgs}::text[])`.execute(db);
  const at = found[0];
  if (!at) return undefined;
  const { rows } = await sql<RunRow>`select * from (${groupedRuns([at.org], at.resource)}) runs where ${id}::int = any(attempt_ids)`.execute(db);
  const run = rows[0];
  if (!run) return undefined;
  const { rows: attemptRows } = await sql<AttemptRow>`
    select id::int as id, status, started_at, finished_at, extract(epoch from (finished_at - started_at))::float8 as seconds, error
      from trainsync.runs where id = any(${run.attempt_ids}::bigint[]) order by started_at, id`.execute(db);
  return { ...run, attemptRows };
}

/** The statuses a finished run ends with, as the alerts read them (a cancelled run is a person's decision, not an outcome). */
const FINISHED: readonly RunStatus[] = ['succeeded', 'incomplete', 'failed'];

/** Runs read per resource for a streak: enough to tell "twice in a row", bounded whatever the history. */
export const STREAK_RUNS = 10;

/** One organisation's resource, as the metrics read it at each scrape. */
export interface RunStreak {
  org: string;
  resource: string;
  /** When its newest succeeded run ended; null when none did. */
  lastCompleteAt: Date | null;
  /** The statuses of its newest finished runs (succeeded, incomplete, failed), newest first, STREAK_RUNS at most. */
  recent: RunStatus[];
}

/**
 * Each organisation's resources of `resources` that finished a run: when the last complete one
 * ended, and the newest statuses. One statement for all of `orgs`, read at every scrape: per
 * pair, one walk of the index (org, resource, started_at desc) over its newest runs, and a
 * second probe only when none of them succeeded; never a scan of every run.
 */
export async function runStreaksOf(db: Db, orgs: readonly string[], resources: readonly string[]): Promise<RunStreak[]> {
  if (orgs.length === 0 || resources.length === 0) return [];
  const { rows } = await sql<{ org: string; resource: string; last_complete_at: Date | null; recent: RunStatus[] }>`
    select c.slug as org, res.resource, l.recent,
      -- coalesce evaluates the probe only when the newest runs hold no success.
      coalesce(l.complete_at, (select g.finished_at from trainsync.runs g
        where g.org = c.slug and g.resource = res.resource and g.status = 'succeeded'
        order by g.started_at desc limit 1)) as last_complete_at
    from unnest(${[...orgs]}::text[]) as c(slug)
    cross join unnest(${[...resources]}::text[]) as res(resource)
    join lateral (
      select array_agg(r.status order by r.started_at desc) as recent,
        (array_agg(r.finished_at order by r.started_at desc) filter (where r.status = 'succeeded'))[1] as complete_at
      from (
        select r.status, r.started_at, r.finished_at from trainsync.runs r
         where r.org = c.slug and r.resource = res.resource and r.status = any(${[...FINISHED]}::text[])
         order by r.started_at desc limit ${STREAK_RUNS}
      ) r
    ) l on l.recent is not null
    order by c.slug, res.resource`.execute(db);
  return rows.map((r) => ({ org: r.org, resource: r.resource, lastCompleteAt: r.last_complete_at, recent: r.recent }));
}
