/**
 * Runs, checkpoints, watermarks and quarantined records (schema `trainsync`).
 *
 * Every function takes an Executor: a pg client inside the caller's transaction
 * (so a checkpoint commits with its rows), the pool, or a kysely instance or
 * transaction. Values read back are parsed at this edge.
 */
import { CompiledQuery, Kysely } from 'kysely';
import type pg from 'pg';
import { z } from 'zod';
import type { RecordProblem } from '../platform/types.ts';
import type { Database, RunStatus } from './database.ts';
import { jsonbText } from './jsonb-text.ts';

/** Anything with pg's `query(text, values)`: a Pool, PoolClient or Client. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
}

export type Executor = Queryable | Kysely<Database>;

async function exec(target: Executor, text: string, values: unknown[] = []): Promise<{ rows: unknown[]; rowCount: number }> {
  if (target instanceof Kysely) {
    const result = await target.executeQuery(CompiledQuery.raw(text, values));
    return { rows: [...result.rows], rowCount: Number(result.numAffectedRows ?? result.rows.length) };
  }
  const result = await target.query(text, values);
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

const instantSchema = z.union([z.date(), z.string().transform((s) => new Date(s))]);
const nullableInstant = instantSchema.nullable();
const countSchema = z.coerce.number().int();

export interface StartRunInput {
  resource: string;
  /** e.g. 'incremental' or 'full'. */
  mode?: string;
  /** The job's parameters as given (window, since/until…); stored as jsonb. */
  params?: unknown;
  /** The BullMQ job id, to find the job from the run. */
  jobId?: string;
}

/** Records a run as `running` and returns its id. */
export async function startRun(target: Executor, input: StartRunInput): Promise<number> {
  const { rows } = await exec(
    target,
    `insert into trainsync.runs (resource, mode, params, job_id) values ($1, $2, $3::jsonb, $4) returning id`,
    [input.resource, input.mode ?? null, jsonbText(input.params ?? {}), input.jobId ?? null],
  );
  return z.object({ id: countSchema }).parse(rows[0]).id;
}

/** Counters of a run; each defaults to 0. */
export interface RunCounts {
  pages?: number;
  inserted?: number;
  updated?: number;
  unchanged?: number;
  quarantined?: number;
  removed?: number;
}

export interface FinishRunInput extends RunCounts {
  status: Exclude<RunStatus, 'running'>;
  error?: string;
  /** e.g. 'not applicable' (no unlimited plan) or 'not available'. */
  note?: string;
}

const COUNTER_NAMES = ['pages', 'inserted', 'updated', 'unchanged', 'quarantined', 'removed'] as const;

/**
 * Adds counts to a running run, e.g. per window in the same transaction as the
 * window's rows and checkpoint, so a retried job's totals stay right.
 */
export async function addRunCounts(target: Executor, runId: number, counts: RunCounts): Promise<void> {
  await exec(
    target,
    `update trainsync.runs set ${COUNTER_NAMES.map((c, i) => `${c} = ${c} + $${i + 2}`).join(', ')} where id = $1`,
    [runId, ...COUNTER_NAMES.map((c) => counts[c] ?? 0)],
  );
}

/**
 * Closes a run: status, finished_at, error and note, and the counts given (the run's
 * totals; a count left out keeps what addRunCounts recorded).
 */
export async function finishRun(target: Executor, runId: number, input: FinishRunInput): Promise<void> {
  await exec(
    target,
    `update trainsync.runs set status = $2, finished_at = now(), error = $3, note = $4,
       ${COUNTER_NAMES.map((c, i) => `${c} = coalesce($${i + 5}::integer, ${c})`).join(', ')}
     where id = $1`,
    [runId, input.status, input.error ?? null, input.note ?? null, ...COUNTER_NAMES.map((c) => input[c] ?? null)],
  );
}

/**
 * The checkpoint's value, parsed by `schema` when given; undefined when there is none.
 * Keys are chosen by the job, e.g. 'results:window:2024-01-01..2024-01-31'.
 */
export async function getCheckpoint<T = unknown>(target: Executor, key: string, schema?: z.ZodType<T>): Promise<T | undefined> {
  const { rows } = await exec(target, 'select value from trainsync.checkpoints where key = $1', [key]);
  if (rows.length === 0) return undefined;
  const value = z.object({ value: z.unknown() }).parse(rows[0]).value;
  return schema ? schema.parse(value) : (value as T);
}

/** Creates or replaces a checkpoint; call it on the client that writes the rows it covers. */
export async function saveCheckpoint(target: Executor, key: string, value: unknown, runId: number | null): Promise<void> {
  await exec(
    target,
    `insert into trainsync.checkpoints (key, value, run_id, updated_at) values ($1, $2::jsonb, $3, now())
     on conflict (key) do update set value = excluded.value, run_id = excluded.run_id, updated_at = excluded.updated_at`,
    [key, jsonbText(value ?? null), runId],
  );
}

/** The keys of every checkpoint whose key starts with `prefix` (literally), sorted. */
export async function listCheckpoints(target: Executor, prefix: string): Promise<string[]> {
  const { rows } = await exec(target, 'select key from trainsync.checkpoints where starts_with(key, $1) order by key', [prefix]);
  return rows.map((row) => z.object({ key: z.string() }).parse(row).key);
}

/** Deletes every checkpoint whose key starts with `prefix` (literally); returns how many. */
export async function deleteCheckpoints(target: Executor, prefix: string): Promise<number> {
  const { rowCount } = await exec(target, 'delete from trainsync.checkpoints where starts_with(key, $1)', [prefix]);
  return rowCount;
}

/** The resource's watermark (e.g. the last fully synced date), or undefined. */
export async function getWatermark(target: Executor, resource: string): Promise<string | undefined> {
  const { rows } = await exec(target, 'select value from trainsync.watermarks where resource = $1', [resource]);
  if (rows.length === 0) return undefined;
  return z.object({ value: z.string() }).parse(rows[0]).value;
}

export async function setWatermark(target: Executor, resource: string, value: string): Promise<void> {
  await exec(
    target,
    `insert into trainsync.watermarks (resource, value, updated_at) values ($1, $2, now())
     on conflict (resource) do update set value = excluded.value, updated_at = excluded.updated_at`,
    [resource, value],
  );
}

/**
 * Stores records that failed validation. The same raw record (same resource) seen
 * again refreshes its row (run, message, last_seen_at, times_seen) rather than adding
 * one. Returns the number of distinct records stored by this call.
 */
export async function quarantineRecords(target: Executor, runId: number | null, problems: readonly RecordProblem[]): Promise<number> {
  if (problems.length === 0) return 0;
  const rows = problems.map((p, n) => ({
    n,
    resource: p.resource,
    raw: p.raw === undefined ? null : p.raw,
    message: p.message,
    page: p.page,
  }));
  // One statement cannot touch the same row twice: keep the last problem per record.
  const { rowCount } = await exec(
    target,
    `with listed as (
       select distinct on (x.resource, md5(x.raw::text)) x.resource, x.raw, x.message, x.page
       from jsonb_to_recordset($2::jsonb) as x(n integer, resource text, raw jsonb, message text, page integer)
       order by x.resource, md5(x.raw::text), x.n desc
     )
     insert into trainsync.quarantine as q (run_id, resource, raw, message, page)
     select $1, resource, coalesce(raw, 'null'::jsonb), message, page from listed
     on conflict (resource, md5(raw::text)) do update set
       run_id = excluded.run_id, message = excluded.message, page = excluded.page,
       last_seen_at = now(), times_seen = q.times_seen + 1`,
    [runId, jsonbText(rows)],
  );
  return rowCount;
}

export interface RunSummary extends Required<RunCounts> {
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

const runRowSchema = z
  .object({
    id: countSchema,
    resource: z.string(),
    job_id: z.string().nullable(),
    mode: z.string().nullable(),
    status: z.enum(['running', 'succeeded', 'failed']),
    started_at: instantSchema,
    finished_at: nullableInstant,
    pages: countSchema,
    inserted: countSchema,
    updated: countSchema,
    unchanged: countSchema,
    quarantined: countSchema,
    removed: countSchema,
    error: z.string().nullable(),
    note: z.string().nullable(),
  })
  .transform(
    (r): RunSummary => ({
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
      error: r.error,
      note: r.note,
    }),
  );

/** The latest run of each resource, by resource name (for `status`). */
export async function lastRuns(target: Executor): Promise<RunSummary[]> {
  const { rows } = await exec(
    target,
    `select distinct on (resource) id, resource, job_id, mode, status, started_at, finished_at,
       pages, inserted, updated, unchanged, quarantined, removed, error, note
     from trainsync.runs order by resource, started_at desc, id desc`,
  );
  return rows.map((row) => runRowSchema.parse(row));
}

export interface QuarantineCount {
  resource: string;
  count: number;
  lastSeenAt: Date;
}

/** Quarantined records per resource (for `status`). */
export async function quarantineCounts(target: Executor): Promise<QuarantineCount[]> {
  const { rows } = await exec(
    target,
    `select resource, count(*) as count, max(last_seen_at) as last_seen_at
     from trainsync.quarantine group by resource order by resource`,
  );
  return rows.map((row) => {
    const r = z.object({ resource: z.string(), count: countSchema, last_seen_at: instantSchema }).parse(row);
    return { resource: r.resource, count: r.count, lastSeenAt: r.last_seen_at };
  });
}
