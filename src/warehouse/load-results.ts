import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from './database.ts';
import type { Result } from '../platform/schemas.ts';
import { copyField, copyText, releaseCopyText, takeCopyText, type CopyText } from './copy-text.ts';
import { jsonbText } from './jsonb-text.ts';
import type { LoadCounts } from './load-counts.ts';

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

// Declared here, not LIKE training.results: a pooled session keeps its temp tables,
// so their shape must follow this code, not whatever the table looked like then.
const STAGE = 'pg_temp.trainsync_stage_results';
/** The staging table's columns and types, in the order `writeStageRow` writes them. */
const STAGE_SHAPE = [
  // Arrival order within the batch: of two rows with one id, the later one wins.
  ['n', 'integer not null'],
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
/** What the upsert wrote, so the answers statement can tell new rows from changed ones server-side. */
const WRITTEN = 'pg_temp.trainsync_written_results';
// One round trip: both temp tables exist and are empty. They empty themselves at each
// commit (cheaper than a TRUNCATE per batch, which swaps files and catalog rows); the
// deletes only find rows when a transaction loads two batches, and cost nothing else.
// A rolled-back transaction takes its CREATE with it, so the tables are created here
// every time they are missing, never assumed.
const PREPARE_STAGE = `
  create temp table if not exists trainsync_stage_results (${STAGE_SHAPE.map(([name, type]) => `${name} ${type}`).join(', ')}) on commit delete rows;
  create temp table if not exists trainsync_written_results (result_id uuid not null, inserted boolean not null) on commit delete rows;
  delete from ${STAGE};
  delete from ${WRITTEN}`;

const DATA_COLUMNS = STAGE_COLUMNS.slice(2, -1);

/**
 * Each id once, its last row: pages shift while paging, so an id can repeat in a batch,
 * and `ON CONFLICT DO UPDATE` refuses one id twice in a statement. Sorted by id, so
 * concurrent batches that overlap lock rows in the same order, which keeps deadlocks
 * between overlapping windows rare.
 */
const LATEST = `latest as materialized (
    select distinct on (result_id) * from ${STAGE} order by result_id, n desc
  )`;

// The organisation is a constant of the batch: a parameter ($2) of the statements, not a
// column of the staged COPY text (no bytes per row, no wider temp table).

// Counts come back as one row; the written ids stay in Postgres for REPLACE_ANSWERS.
// $1: the load's instant, $2: the organisation.
const UPSERT = `
  with ${LATEST}, written as (
    insert into training.results as r
      (org, result_id, ${DATA_COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at)
    select $2::text, result_id, ${DATA_COLUMNS.join(', ')}, $1::timestamptz, $1::timestamptz, $1::timestamptz
    from latest order by result_id
    on conflict (org, result_id) do update set
      ${DATA_COLUMNS.map((c) => `${c} = excluded.${c}`).join(',\n      ')},
      last_seen_at = excluded.last_seen_at,
      updated_at = excluded.updated_at,
      removed_at = null
    -- Unchanged rows are not rewritten: no dead tuples, no WAL, and they count as unchanged.
    where (${DATA_COLUMNS.map((c) => `r.${c}`).join(', ')})
          is distinct from (${DATA_COLUMNS.map((c) => `excluded.${c}`).join(', ')})
       or r.removed_at is not null
    returning r.result_id, (r.xmax = 0) as inserted
  ), saved as (
    insert into ${WRITTEN} (result_id, inserted) select result_id, inserted from written
    returning inserted
  )
  select (select count(*)::int from latest) as distinct_ids, count(*)::int as written, (count(*) filter (where inserted))::int as inserted
  from saved`;

/**
 * Replaces each staged result's answers, and marks updated the results whose only change
 * was their answers (the upsert skipped them as unchanged). Only results that existed
 * before this batch can have answers to delete or be "answers only", and of those only
 * the ones whose stored answers differ from the listed ones are touched: on a reload
 * most are unchanged, and comparing them costs one index scan each, where deleting
 * nothing and inserting every answer again (each a conflict) cost two. Ids go to the
 * planner as arrays, so it probes the indexes instead of scanning a table (a hash join
 * over all of `training.results` per batch made a first load quadratic).
 * $1: the load's instant, $2: the organisation.
 */
const REPLACE_ANSWERS = `
  with ${LATEST}, existing as materialized (
    select e.result_id, e.answer_ids from latest e
    where not exists (select 1 from ${WRITTEN} w where w.result_id = e.result_id and w.inserted)
  ), changed as materialized (
    select e.result_id, e.answer_ids from existing e
    where e.answer_ids is distinct from array(
      select a.answer_id from training.result_filter_answers a where a.org = $2 and a.result_id = e.result_id order by a.answer_id
    )
  ), deleted as (
    delete from training.result_filter_answers a
    using changed s
    where a.org = $2 and a.result_id = any (array(select result_id from changed))
      and s.result_id = a.result_id and a.answer_id <> all (s.answer_ids)
    returning a.result_id
  ), added as (
    insert into training.result_filter_answers (org, result_id, answer_id)
    select $2::text, s.result_id, unnest(s.answer_ids) from latest s
    where not exists (select 1 from existing e where e.result_id = s.result_id)
    union all
    select $2::text, s.result_id, unnest(s.answer_ids) from changed s
    on conflict do nothing
    returning result_id
  ), answers_only as (
    update training.results r set updated_at = $1::timestamptz, last_seen_at = $1::timestamptz
    where r.org = $2 and r.result_id = any (array(
        select result_id from deleted union select result_id from added
        except select result_id from ${WRITTEN}
      ))
    returning 1
  )
  select count(*)::int as answers_only from answers_only`;

/**
 * A first load's statements: every staged row is new, so plain INSERTs (no conflict
 * arbitration, no dedup, no answers to compare). Run under a savepoint: an id already
 * stored, or staged twice (pages shifted while paged), fails them with a unique
 * violation, and the batch is written again by the upsert. $1: the load's instant, $2
 * (INSERT_NEW_ANSWERS: $1): the organisation.
 */
const INSERT_NEW = `
  insert into training.results (org, result_id, ${DATA_COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at)
  select $2::text, result_id, ${DATA_COLUMNS.join(', ')}, $1::timestamptz, $1::timestamptz, $1::timestamptz from ${STAGE} order by result_id`;
const INSERT_NEW_ANSWERS = `insert into training.result_filter_answers (org, result_id, answer_id) select $1::text, result_id, unnest(answer_ids) from ${STAGE}`;
const UNIQUE_VIOLATION = '23505';

/** Every staged id, once, as seen by run $1 of organisation $2 (full mode), for markUnseenResultsRemoved. */
const SIGHT = `insert into trainsync.result_sightings (org, run_id, result_id) select distinct $2::text, $1::bigint, result_id from ${STAGE}`;

/** The parts of a batch's write, for `npm run bench -- writepath`. */
export type WritePhase = 'stage' | 'upsert' | 'answers' | 'sightings';

export interface UpsertResultsOptions {
  /** The organisation whose key listed the results (its slug): every row is written under it. */
  org: string;
  /** The instant of this load: first_seen_at / last_seen_at / updated_at of rows it writes. */
  seenAt: Date;
  /** Required with trackSightings. */
  runId?: number;
  /** Full mode: record every id seen, for markUnseenResultsRemoved at the run's end. */
  trackSightings?: boolean;
  /**
   * The rows are most likely all new (a first load into an empty table): try plain
   * INSERTs first, and fall back to the upsert when an id turns out to exist.
   */
  fresh?: boolean;
  /** Told how long each part of the write took (profiling). */
  onPhase?: (phase: WritePhase, ms: number) => void;
}

/** The fields of a record this version does not know, or null when there are none. */
export function unknownResultFields(result: Result): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const key in result) {
    if (KNOWN_RESULT_FIELDS.has(key)) continue;
    extra ??= {};
    extra[key] = result[key];
  }
  return extra;
}

/** The answers as a sorted set: `{a,b}` needs no copy for the usual zero or one answer. */
function answerIds(filters: readonly string[]): readonly string[] {
  if (filters.length < 2) return filters;
  return [...new Set(filters)].sort();
}

/** `\N` (null) or the value as COPY text; ids and instants are the schema's normalised ASCII. */
const plain = (value: string | number | null): string | number => value ?? '\\N';
const free = (value: string | null): string => (value === null ? '\\N' : copyField(value));

/**
 * Results on their way to one warehouse transaction, held as the COPY text of the
 * staging table from the moment each is added: a page's records are garbage as soon as
 * the page is read, instead of living (and being promoted to the old generation) until
 * their batch is written, and the text sits in a buffer outside the JS heap that serves
 * batch after batch. Duplicates and order are settled by Postgres (`latest`).
 */
export class ResultBatch {
  private readonly text: CopyText = takeCopyText();
  private rows = 0;

  /** Rows added, duplicates included. */
  get size(): number {
    return this.rows;
  }

  add(result: Result): void {
    const r = result;
    const extra = unknownResultFields(r);
    this.text.append(
      `${this.rows}\t${r.id}\t${r.userId}\t${r.courseId}\t${plain(r.multiCourseResultId)}\t${r.isComplete ? 't' : 'f'}\t${plain(r.dateCompleted)}\t` +
        `${plain(r.score)}\t${plain(r.maximumScore)}\t${plain(r.passRate)}\t${free(r.courseType)}\t${free(extra === null ? null : jsonbText(extra))}\t` +
        `{${answerIds(r.resultFilters).join(',')}}\n`,
    );
    this.rows += 1;
  }

  /** Stages the batch on `client` (again, if a transaction is retried). */
  stage(client: pg.PoolClient): Promise<void> {
    return copyText(client, STAGE, STAGE_COLUMNS, this.text);
  }

  /** Call once the batch is written for good: its buffer serves a later batch. */
  release(): void {
    releaseCopyText(this.text);
  }
}

/**
 * Writes one batch of results (the caller batches, e.g. 2,000) on a client inside the
 * caller's transaction: COPY into a temp staging table, then one
 * `INSERT … ON CONFLICT DO UPDATE … WHERE … IS DISTINCT FROM …`. Each result's filter
 * answers are replaced by the listed ones; a result whose only change is its answers,
 * or that was marked removed and is listed again, counts as updated. Ids repeated in
 * the batch are written once (the last wins). Unknown fields are kept in `extra`.
 */
export async function upsertResultBatch(client: pg.PoolClient, batch: ResultBatch, options: UpsertResultsOptions): Promise<LoadCounts> {
  if (options.trackSightings && options.runId === undefined) throw new Error('upsertResults: trackSightings needs a runId');
  if (batch.size === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const onPhase = options.onPhase;
  let mark = onPhase ? performance.now() : 0;
  const lap = (phase: WritePhase): void => {
    if (!onPhase) return;
    const now = performance.now();
    onPhase(phase, now - mark);
    mark = now;
  };
  await client.query(PREPARE_STAGE);
  await batch.stage(client);
  lap('stage');
  if (options.fresh) {
    const inserted = await insertNewResults(client, options.org, options.seenAt, lap);
    if (inserted !== undefined) {
      if (options.trackSightings) {
        await client.query(SIGHT, [options.runId, options.org]);
        lap('sightings');
      }
      return { inserted, updated: 0, unchanged: 0 };
    }
  }
  // Each statement answers one row: no row per result comes back to this process.
  const upserted = await client.query<{ distinct_ids: number; written: number; inserted: number }>(UPSERT, [options.seenAt, options.org]);
  const { distinct_ids: distinct, written, inserted } = upserted.rows[0]!;
  lap('upsert');
  const replaced = await client.query<{ answers_only: number }>(REPLACE_ANSWERS, [options.seenAt, options.org]);
  const answersOnly = replaced.rows[0]!.answers_only;
  lap('answers');
  if (options.trackSightings) {
    await client.query(SIGHT, [options.runId, options.org]);
    lap('sightings');
  }

  const updated = written - inserted + answersOnly;
  return { inserted, updated, unchanged: distinct - inserted - updated };
}

/** The staged rows by plain INSERTs, or undefined (and nothing written) when one of them exists already. */
async function insertNewResults(client: pg.PoolClient, org: string, seenAt: Date, lap: (phase: WritePhase) => void): Promise<number | undefined> {
  await client.query('savepoint trainsync_new_results');
  try {
    const { rowCount } = await client.query(INSERT_NEW, [seenAt, org]);
    lap('upsert');
    await client.query(INSERT_NEW_ANSWERS, [org]);
    lap('answers');
    await client.query('release savepoint trainsync_new_results');
    return rowCount ?? 0;
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNIQUE_VIOLATION) throw error;
    await client.query('rollback to savepoint trainsync_new_results');
    return undefined;
  }
}

/** `upsertResultBatch` of an array of results (webhooks, tests, benchmarks). */
export async function upsertResults(client: pg.PoolClient, results: readonly Result[], options: UpsertResultsOptions): Promise<LoadCounts> {
  const batch = new ResultBatch();
  for (const result of results) batch.add(result);
  const counts = await upsertResultBatch(client, batch, options);
  batch.release();
  return counts;
}

/**
 * Records result ids as seen by a full-mode run without writing them, e.g. results
 * that failed validation: they exist, so they must not be marked removed.
 */
export async function recordSightings(client: pg.PoolClient, org: string, runId: number, resultIds: readonly string[]): Promise<void> {
  if (resultIds.length === 0) return;
  await client.query('insert into trainsync.result_sightings (org, run_id, result_id) select $3, $1, unnest($2::uuid[])', [
    runId,
    resultIds,
    org,
  ]);
}

/**
 * Whether `training.results` holds no row of the organisation (its first load, which needs
 * no sightings; another organisation's rows are keyed apart, so plain inserts still fit).
 */
export async function resultsTableEmpty(db: Kysely<Database>, org: string): Promise<boolean> {
  const { rows } = await sql<{ empty: boolean }>`select not exists (select 1 from training.results where org = ${org}) as empty`.execute(db);
  return rows[0]!.empty;
}

/** Forgets a run's sightings without marking anything (a walk that did not finish). */
export async function clearSightings(client: pg.PoolClient, org: string, runId: number): Promise<void> {
  await client.query('delete from trainsync.result_sightings where org = $2 and run_id = $1', [runId, org]);
}

/**
 * After a full-mode walk of every result of the organisation: marks its results not sighted by the run
 * (`removed_at = now()`) and clears the run's sightings. Returns how many were marked.
 * Call it only when the walk completed; a partial walk would mark live results.
 */
export async function markUnseenResultsRemoved(client: pg.PoolClient, org: string, runId: number): Promise<number> {
  // A hash anti-join, always: on a table not analysed yet (a reload right after the first
  // load) `org = $2` looks selective to the planner (0.5 %), and it would loop over every
  // sighting once per result, minutes for 200,000. Off for this statement only.
  const { rows } = await client.query<{ was: string }>("select current_setting('enable_nestloop') as was, set_config('enable_nestloop', 'off', true)");
  const { rowCount } = await client.query(
    `update training.results r set removed_at = now()
     where r.org = $2 and r.removed_at is null
       -- A result written after the walk began (a webhook's) may sit on a page already passed.
       and r.last_seen_at < (select started_at from trainsync.runs where id = $1)
       -- A run is one organisation's: its sightings need no org test.
       and not exists (
         select 1 from trainsync.result_sightings s where s.run_id = $1 and s.result_id = r.result_id
       )`,
    [runId, org],
  );
  await client.query("select set_config('enable_nestloop', $1, true)", [rows[0]!.was]);
  await client.query('delete from trainsync.result_sightings where org = $2 and run_id = $1', [runId, org]);
  return rowCount ?? 0;
}

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of a batch's upsert and answers statements, run inside
 * the caller's transaction (roll it back afterwards): the plans of the write path.
 */
export async function explainResultBatch(client: pg.PoolClient, org: string, batch: ResultBatch, seenAt: Date): Promise<{ upsert: string; answers: string }> {
  await client.query(PREPARE_STAGE);
  await batch.stage(client);
  const explain = async (text: string): Promise<string> => {
    const plan = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${text}`, [seenAt, org]);
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  };
  return { upsert: await explain(UPSERT), answers: await explain(REPLACE_ANSWERS) };
}
