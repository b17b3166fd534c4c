/**
 * Runs, checkpoints, watermarks and quarantined records (schema `trainsync`).
 *
 * Every function takes Kysely first: the process's handle, or `tx.db` inside a
 * transaction (so a checkpoint commits with its rows). Values read back are parsed
 * at this edge. State is per organisation: every function that names state by a key,
 * a resource or a job takes the organisation's slug next (`ctx.org.slug` in a job) and
 * writes or filters `org` with it. Functions given a run id need none: run ids are one
 * sequence across organisations, so an id names one organisation's run.
 */
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { RecordProblem } from '../platform/types.ts';
import type { Database, RunStatus } from '../warehouse/database.ts';
import { jsonbText } from '../warehouse/jsonb-text.ts';

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
export async function startRun(db: Db, org: string, input: StartRunInput): Promise<number> {
  const row = await db
    .insertInto('trainsync.runs')
    .values({ org, resource: input.resource, mode: input.mode ?? null, params: jsonbText(input.params ?? {}), job_id: input.jobId ?? null, started_at: sql<Date>`clock_timestamp()` })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface FinishRunInput extends Partial<RunCounts> {
  status: Exclude<RunStatus, 'running'>;
  error?: string | undefined;
  /** e.g. 'not applicable' (no unlimited plan) or 'not available'. */
  note?: string | undefined;
}

/**
 * Adds counts to a running run, e.g. per batch in the same transaction as the
 * batch's rows and checkpoint, so a retried job's totals stay right.
 */
export async function addRunCounts(db: Db, runId: number, counts: Partial<RunCounts>): Promise<void> {
  const set = Object.fromEntries(COUNTER_NAMES.map((c) => [c, sql<number>`${sql.ref(c)} + ${counts[c] ?? 0}`]));
  await db.updateTable('trainsync.runs').set(set).where('id', '=', runId).execute();
}

/**
 * Closes a run: status, finished_at, error and note, and the counts given (added to
 * what addRunCounts recorded).
 */
export async function finishRun(db: Db, runId: number, input: FinishRunInput): Promise<void> {
  await addRunCounts(db, runId, input);
  await db
    .updateTable('trainsync.runs')
    .set({ status: input.status, finished_at: sql<Date>`clock_timestamp()`, error: input.error ?? null, note: input.note ?? null })
    .where('id', '=', runId)
    .execute();
}

/**
 * Marks the resource's other runs still `running` as failed (call it only while holding
 * the resource's exclusive lock); returns how many.
 */
export async function closeAbandonedRuns(db: Db, org: string, resource: string, exceptRunId: number): Promise<number> {
  const result = await db
    .updateTable('trainsync.runs')
    .set({ status: 'failed', finished_at: sql<Date>`clock_timestamp()`, error: 'cut off before it finished (its worker stopped or lost the database); a later run took over' })
    .where('org', '=', org)
    .where('resource', '=', resource)
    .where('status', '=', 'running')
    .where('id', '<>', exceptRunId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Closes the runs a removed job left running as cancelled, with why; returns how many. */
export async function cancelRunsOfJob(db: Db, org: string, jobId: string, reason: string): Promise<number> {
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

/**
 * The checkpoint's value, parsed by `schema`; undefined when there is none. Keys are
 * chosen by the job, e.g. 'results:window:2024-01-01..2024-01-31'.
 */
export async function getCheckpoint<T>(db: Db, org: string, key: string, schema: z.ZodType<T>): Promise<T | undefined> {
  const row = await db.selectFrom('trainsync.checkpoints').select('value').where('org', '=', org).where('key', '=', key).executeTakeFirst();
  return row === undefined ? undefined : schema.parse(row.value);
}

/** Creates or replaces a checkpoint; call it on the transaction that writes the rows it covers. */
export async function saveCheckpoint(db: Db, org: string, key: string, value: unknown, runId: number | null): Promise<void> {
  const row = { org, key, value: jsonbText(value ?? null), run_id: runId, updated_at: sql<Date>`now()` };
  await db
    .insertInto('trainsync.checkpoints')
    .values(row)
    .onConflict((oc) => oc.columns(['org', 'key']).doUpdateSet({ value: row.value, run_id: runId, updated_at: row.updated_at }))
    .execute();
}

/** The keys of every checkpoint whose key starts with `prefix` (literally), sorted. */
export async function listCheckpoints(db: Db, org: string, prefix: string): Promise<string[]> {
  const rows = await db.selectFrom('trainsync.checkpoints').select('key').where('org', '=', org).where(sql<boolean>`starts_with(key, ${prefix})`).orderBy('key').execute();
  return rows.map((row) => row.key);
}

/** Deletes every checkpoint whose key starts with `prefix` (literally); returns how many. */
export async function deleteCheckpoints(db: Db, org: string, prefix: string): Promise<number> {
  const result = await db.deleteFrom('trainsync.checkpoints').where('org', '=', org).where(sql<boolean>`starts_with(key, ${prefix})`).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The resource's watermark (e.g. the last fully synced date), or undefined. */
export async function getWatermark(db: Db, org: string, resource: string): Promise<string | undefined> {
  const row = await db.selectFrom('trainsync.watermarks').select('value').where('org', '=', org).where('resource', '=', resource).executeTakeFirst();
  return row?.value;
}

export async function setWatermark(db: Db, org: string, resource: string, value: string): Promise<void> {
  await db
    .insertInto('trainsync.watermarks')
    .values({ org, resource, value, updated_at: sql<Date>`now()` })
    .onConflict((oc) => oc.columns(['org', 'resource']).doUpdateSet({ value, updated_at: sql<Date>`now()` }))
    .execute();
}

/** Every watermark of the organisation, by resource (for `status`). */
export async function listWatermarks(db: Db, org: string): Promise<Array<{ resource: string; value: string; updatedAt: Date }>> {
  const rows = await db.selectFrom('trainsync.watermarks').select(['resource', 'value', 'updated_at']).where('org', '=', org).orderBy('resource').execute();
  return rows.map((w) => ({ resource: w.resource, value: w.value, updatedAt: w.updated_at }));
}

/** A record that failed validation; `page` is null when it was not read from a list (a webhook's GET results/{id}). */
export type QuarantinedRecord = Pick<RecordProblem, 'resource' | 'raw' | 'message'> & { page: number | null };

/**
 * Stores records that failed validation. The same raw record (same resource) seen
 * again refreshes its row (run, message, last_seen_at, times_seen) rather than adding
 * one. Returns the number of distinct records stored by this call.
 */
export async function quarantineRecords(db: Db, org: string, runId: number | null, problems: readonly QuarantinedRecord[]): Promise<number> {
  if (problems.length === 0) return 0;
  const rows = problems.map((p, n) => ({ n, resource: p.resource, raw: p.raw === undefined ? null : p.raw, message: p.message, page: p.page }));
  // One statement cannot touch the same row twice: keep the last problem per record.
  const result = await sql`
    with listed as (
      select distinct on (x.resource, md5(x.raw::text)) x.resource, x.raw, x.message, x.page
      from jsonb_to_recordset(${jsonbText(rows)}::jsonb) as x(n integer, resource text, raw jsonb, message text, page integer)
      order by x.resource, md5(x.raw::text), x.n desc
    )
    insert into trainsync.quarantine as q (org, run_id, resource, raw, message, page)
    select ${org}, ${runId}, resource, coalesce(raw, 'null'::jsonb), message, page from listed
    on conflict (org, resource, md5(raw::text)) do update set
      run_id = excluded.run_id, message = excluded.message, page = excluded.page,
      last_seen_at = now(), times_seen = q.times_seen + 1`.execute(db);
  return Number(result.numAffectedRows ?? 0);
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
export async function lastRuns(db: Db, org: string): Promise<RunSummary[]> {
  const rows = await db
    .selectFrom('trainsync.runs')
    .distinctOn('resource')
    .select(['id', 'resource', 'job_id', 'mode', 'status', 'started_at', 'finished_at', ...COUNTER_NAMES, 'error', 'note'])
    .where('org', '=', org)
    .orderBy('resource')
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({
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
  }));
}

/** Distinct records this run quarantined: a record read again in the same run counts once. */
export async function countQuarantined(db: Db, runId: number): Promise<number> {
  const row = await db.selectFrom('trainsync.quarantine').select(sql<number>`count(*)`.as('n')).where('run_id', '=', runId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A window a run could not finish, and why. */
export interface UnfinishedWindow {
  key: string;
  reason: string;
  runId: number | null;
  recordedAt: Date;
}

/** The windows of a resource that earlier runs could not finish, oldest first. */
export async function listUnfinishedWindows(db: Db, org: string, resource: string): Promise<UnfinishedWindow[]> {
  const rows = await db.selectFrom('trainsync.unfinished_windows').selectAll().where('org', '=', org).where('resource', '=', resource).orderBy('window_key').execute();
  return rows.map((r) => ({ key: r.window_key, reason: r.reason, runId: r.run_id, recordedAt: r.recorded_at }));
}

/**
 * Replaces what a run leaves unfinished: the windows it read to the end are cleared,
 * the ones it could not are (re)recorded. Call it in the run's finishing transaction.
 */
export async function recordUnfinishedWindows(
  db: Db,
  org: string,
  resource: string,
  runId: number,
  outcome: { finished: readonly string[]; unfinished: ReadonlyArray<{ key: string; reason: string }> },
): Promise<void> {
  const cleared = [...outcome.finished, ...outcome.unfinished.map((w) => w.key)];
  if (cleared.length > 0) await db.deleteFrom('trainsync.unfinished_windows').where('org', '=', org).where('resource', '=', resource).where('window_key', 'in', cleared).execute();
  if (outcome.unfinished.length === 0) return;
  await db
    .insertInto('trainsync.unfinished_windows')
    .values(outcome.unfinished.map((w) => ({ org, resource, window_key: w.key, reason: w.reason, run_id: runId })))
    .execute();
}

export interface QuarantineCount {
  resource: string;
  count: number;
  lastSeenAt: Date;
}

/** The organisation's quarantined records per resource (for `status`). */
export async function quarantineCounts(db: Db, org: string): Promise<QuarantineCount[]> {
  const rows = await db
    .selectFrom('trainsync.quarantine')
    .select(['resource', sql<number>`count(*)`.as('count'), sql<Date>`max(last_seen_at)`.as('last_seen_at')])
    .where('org', '=', org)
    .groupBy('resource')
    .orderBy('resource')
    .execute();
  return rows.map((r) => ({ resource: r.resource, count: Number(r.count), lastSeenAt: r.last_seen_at }));
}
