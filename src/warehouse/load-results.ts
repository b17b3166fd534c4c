import type pg from 'pg';
import type { Result } from '../platform/schemas.ts';
import { copyRows, type CopyValue } from './copy-text.ts';
import { jsonbText } from './jsonb-text.ts';
import { dedupeById, type LoadCounts } from './load-counts.ts';

/** The Result fields this version stores in columns; anything else goes to `extra`. */
const KNOWN_RESULT_FIELDS = new Set([
  'id',
  'userId',
  'courseId',
  'multiCourseResultId',
  'isComplete',
  'dateCompleted',
  'score',
  'maximumScore',
  'passRate',
  'courseType',
  'resultFilters',
]);

// Declared here, not LIKE training.results: a pooled session keeps its temp table,
// so its shape must follow this code, not whatever the table looked like then.
const STAGE = 'pg_temp.trainsync_stage_results';
/** The staging table's columns and types, in the order `stageRow` writes them. */
const STAGE_SHAPE = [
  ['result_id', 'uuid not null'],
  ['user_id', 'uuid not null'],
  ['course_id', 'uuid not null'],
  ['multi_course_result_id', 'uuid'],
  ['is_complete', 'boolean not null'],
  ['date_completed', 'timestamptz'],
  ['score', 'integer'],
  ['maximum_score', 'integer'],
  ['pass_rate', 'integer'],
  ['course_type', 'text'],
  ['extra', 'jsonb'],
  ['answer_ids', 'uuid[] not null'],
] as const;
const STAGE_COLUMNS = STAGE_SHAPE.map(([name]) => name);
const CREATE_STAGE = `create temp table if not exists trainsync_stage_results (${STAGE_SHAPE.map(([name, type]) => `${name} ${type}`).join(', ')})`;

const DATA_COLUMNS = STAGE_COLUMNS.slice(1, -1);

const UPSERT = `
  insert into training.results as r
    (result_id, ${DATA_COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at)
  select result_id, ${DATA_COLUMNS.join(', ')}, $1::timestamptz, $1::timestamptz, $1::timestamptz
  from ${STAGE}
  on conflict (result_id) do update set
    ${DATA_COLUMNS.map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    last_seen_at = excluded.last_seen_at,
    updated_at = excluded.updated_at,
    removed_at = null
  -- Unchanged rows are not rewritten: no dead tuples, no WAL, and they count as unchanged.
  where (${DATA_COLUMNS.map((c) => `r.${c}`).join(', ')})
        is distinct from (${DATA_COLUMNS.map((c) => `excluded.${c}`).join(', ')})
     or r.removed_at is not null
  returning r.result_id, (r.xmax = 0) as inserted`;

// Replaces each staged result's answers; returns the results whose answers changed.
// $1 lists the results that existed before this batch: only they can have answers to
// delete, and naming them lets the planner probe the index instead of scanning it.
const REPLACE_ANSWERS = `
  with deleted as (
    delete from training.result_filter_answers a
    using ${STAGE} s
    where a.result_id = any ($1::uuid[]) and s.result_id = a.result_id and a.answer_id <> all (s.answer_ids)
    returning a.result_id
  ), added as (
    insert into training.result_filter_answers (result_id, answer_id)
    select s.result_id, unnest(s.answer_ids) from ${STAGE} s
    on conflict do nothing
    returning result_id
  )
  select result_id from deleted union select result_id from added`;

export interface UpsertResultsOptions {
  /** The instant of this load: first_seen_at / last_seen_at / updated_at of rows it writes. */
  seenAt: Date;
  /** Required with trackSightings. */
  runId?: number;
  /** Full mode: record every id seen, for markUnseenResultsRemoved at the run's end. */
  trackSightings?: boolean;
}

/** The fields of a record this version does not know, or null when there are none. */
export function unknownResultFields(result: Result): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const [key, value] of Object.entries(result)) {
    if (KNOWN_RESULT_FIELDS.has(key)) continue;
    extra ??= {};
    extra[key] = value;
  }
  return extra;
}

function stageRow(result: Result): CopyValue[] {
  const extra = unknownResultFields(result);
  return [
    result.id,
    result.userId,
    result.courseId,
    result.multiCourseResultId,
    result.isComplete,
    result.dateCompleted,
    result.score,
    result.maximumScore,
    result.passRate,
    result.courseType,
    extra === null ? null : jsonbText(extra),
    [...new Set(result.resultFilters)].sort(),
  ];
}

/**
 * Writes one batch of results (the caller batches, e.g. 5,000) on a client inside the
 * caller's transaction: COPY into a temp staging table, then one
 * `INSERT … ON CONFLICT DO UPDATE … WHERE … IS DISTINCT FROM …`. Each result's filter
 * answers are replaced by the listed ones; a result whose only change is its answers,
 * or that was marked removed and is listed again, counts as updated. Ids repeated in
 * the batch are written once (the last wins). Unknown fields are kept in `extra`.
 */
export async function upsertResults(
  client: pg.PoolClient,
  results: readonly Result[],
  options: UpsertResultsOptions,
): Promise<LoadCounts> {
  if (options.trackSightings && options.runId === undefined) throw new Error('upsertResults: trackSightings needs a runId');
  // Sorted by id: concurrent batches that overlap then lock rows in the same order,
  // which keeps deadlocks between overlapping windows rare.
  const batch = dedupeById(results, (r) => r.id).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (batch.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };

  await client.query(CREATE_STAGE);
  await client.query(`truncate ${STAGE}`);
  await copyRows(client, STAGE, STAGE_COLUMNS, batch.map(stageRow));

  const written = await client.query<{ result_id: string; inserted: boolean }>(UPSERT, [options.seenAt]);
  let inserted = 0;
  const touched = new Set<string>();
  const insertedIds = new Set<string>();
  for (const row of written.rows) {
    touched.add(row.result_id);
    if (!row.inserted) continue;
    inserted += 1;
    insertedIds.add(row.result_id);
  }
  const existed = batch.filter((r) => !insertedIds.has(r.id)).map((r) => r.id);
  const answersChanged = await client.query<{ result_id: string }>(REPLACE_ANSWERS, [existed]);
  const answersOnly = answersChanged.rows.map((r) => r.result_id).filter((id) => !touched.has(id));
  if (answersOnly.length > 0) {
    await client.query(
      `update training.results set updated_at = $1::timestamptz, last_seen_at = $1::timestamptz
       where result_id = any ($2::uuid[])`,
      [options.seenAt, answersOnly],
    );
  }
  if (options.trackSightings) {
    await client.query(`insert into trainsync.result_sightings (run_id, result_id) select $1, result_id from ${STAGE}`, [
      options.runId,
    ]);
  }
  await client.query(`truncate ${STAGE}`);

  const updated = written.rows.length - inserted + answersOnly.length;
  return { inserted, updated, unchanged: batch.length - inserted - updated };
}

/**
 * Records result ids as seen by a full-mode run without writing them, e.g. results
 * that failed validation: they exist, so they must not be marked removed.
 */
export async function recordSightings(client: pg.PoolClient, runId: number, resultIds: readonly string[]): Promise<void> {
  if (resultIds.length === 0) return;
  await client.query('insert into trainsync.result_sightings (run_id, result_id) select $1, unnest($2::uuid[])', [
    runId,
    resultIds,
  ]);
}

/** Forgets a run's sightings without marking anything (a walk that did not finish). */
export async function clearSightings(client: pg.PoolClient, runId: number): Promise<void> {
  await client.query('delete from trainsync.result_sightings where run_id = $1', [runId]);
}

/**
 * After a full-mode walk of every result: marks results not sighted by the run
 * (`removed_at = now()`) and clears the run's sightings. Returns how many were marked.
 * Call it only when the walk completed; a partial walk would mark live results.
 */
export async function markUnseenResultsRemoved(client: pg.PoolClient, runId: number): Promise<number> {
  const { rowCount } = await client.query(
    `update training.results r set removed_at = now()
     where r.removed_at is null
       and not exists (
         select 1 from trainsync.result_sightings s where s.run_id = $1 and s.result_id = r.result_id
       )`,
    [runId],
  );
  await client.query('delete from trainsync.result_sightings where run_id = $1', [runId]);
  return rowCount ?? 0;
}
