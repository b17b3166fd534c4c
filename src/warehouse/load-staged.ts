import { sql } from 'kysely';
import type pg from 'pg';
import { copyField, copyText, releaseCopyText, takeCopyText, type CopyText, type CopyValue } from './copy-text.ts';
import type { LoadCounts } from './load-counts.ts';
import type { OrgDb, OrgTx } from './scope.ts';

/**
 * The generic loader of a windowed resource (results): a table described by a resource
 * declaration (src/sync/resources/), written through COPY into a temp staging table and
 * one `INSERT … ON CONFLICT DO UPDATE … WHERE … IS DISTINCT FROM …`, the fastest upsert
 * path measured here. The statements are built once per table from its description;
 * for training.results they are the statements load-results.ts held.
 */
export interface StagedTable<T> {
  /** Schema-qualified name, a trusted identifier from our code; rows keyed (org, key). */
  table: string;
  /** The key column (uuid). */
  key: string;
  /** Data columns in COPY order, with the staging table's types (`uuid not null`, `text`…); compared to decide "changed". */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
  /**
   * A set of ids per row kept in a child table (a result's filter answers): staged as
   * the last column (`uuid[]`, sorted, each id once), replaced with each row's listing.
   */
  idSet?: { table: string; column: string } | undefined;
  /** Where a full walk records the keys it saw (org, run_id, key), so rows it did not see can be marked removed. */
  sightings: string;
  /**
   * The row of a record: the key, each data column, then (with `idSet`) the id set, in
   * that order. Ids and instants as the schema normalised them (ASCII); text and jsonb
   * are escaped for COPY here.
   */
  row(record: T): readonly CopyValue[];
}

/** What is built once per table: the staging shape and every statement. */
interface Statements {
  stage: string;
  stageColumns: readonly string[];
  /** How each staged value after `n` is written: 0 as it is, 1 escaped text, 2 boolean, 3 uuid array. */
  kinds: readonly number[];
  prepare: string;
  upsert: string;
  replaceSet: string | undefined;
  insertNew: string;
  insertNewSet: string | undefined;
  sight: string;
}

const built = new WeakMap<StagedTable<never>, Statements>();

function kindOf(type: string): number {
  const base = type.replace(/\s+not null$/i, '').trim().toLowerCase();
  if (base === 'text' || base === 'jsonb' || base === 'json') return 1;
  if (base === 'boolean') return 2;
  if (base.endsWith('[]')) return 3;
  return 0;
}

function statementsOf<T>(spec: StagedTable<T>): Statements {
  const found = built.get(spec as StagedTable<never>);
  if (found !== undefined) return found;
  const bare = spec.table.slice(spec.table.lastIndexOf('.') + 1);
  const key = spec.key;
  // Declared here, not LIKE the table: a pooled session keeps its temp tables,
  // so their shape must follow this code, not whatever the table looked like then.
  const STAGE = `pg_temp.trainsync_stage_${bare}`;
  const shape: Array<readonly [string, string]> = [
    // Arrival order within the batch: of two rows with one id, the later one wins.
    ['n', 'integer not null'],
    [key, 'uuid not null'],
    ...spec.columns,
    ...(spec.idSet ? [['set_ids', 'uuid[] not null'] as const] : []),
  ];
  const stageColumns = shape.map(([name]) => name);
  const DATA_COLUMNS = spec.columns.map(([name]) => name);
  /** What the upsert wrote, so the set statement can tell new rows from changed ones server-side. */
  const WRITTEN = `pg_temp.trainsync_written_${bare}`;
  // One round trip: both temp tables exist and are empty. They empty themselves at each
  // commit (cheaper than a TRUNCATE per batch, which swaps files and catalog rows); the
  // deletes only find rows when a transaction loads two batches, and cost nothing else.
  // A rolled-back transaction takes its CREATE with it, so the tables are created here
  // every time they are missing, never assumed.
  const prepare = `
  create temp table if not exists trainsync_stage_${bare} (${shape.map(([name, type]) => `${name} ${type}`).join(', ')}) on commit delete rows;
  create temp table if not exists trainsync_written_${bare} (${key} uuid not null, inserted boolean not null) on commit delete rows;
  delete from ${STAGE};
  delete from ${WRITTEN}`;

  /*
   * Each id once, its last row: pages shift while paging, so an id can repeat in a batch,
   * and `ON CONFLICT DO UPDATE` refuses one id twice in a statement. Sorted by id, so
   * concurrent batches that overlap lock rows in the same order, which keeps deadlocks
   * between overlapping windows rare.
   */
  const LATEST = `latest as materialized (
    select distinct on (${key}) * from ${STAGE} order by ${key}, n desc
  )`;

  // The organisation is a constant of the batch: a parameter ($2) of the statements, not a
  // column of the staged COPY text (no bytes per row, no wider temp table).

  // Counts come back as one row; the written ids stay in Postgres for the set statement.
  // $1: the load's instant, $2: the organisation.
  const upsert = `
  with ${LATEST}, written as (
    insert into ${spec.table} as r
      (org, ${key}, ${DATA_COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at)
    select $2::text, ${key}, ${DATA_COLUMNS.join(', ')}, $1::timestamptz, $1::timestamptz, $1::timestamptz
    from latest order by ${key}
    on conflict (org, ${key}) do update set
      ${DATA_COLUMNS.map((c) => `${c} = excluded.${c}`).join(',\n      ')},
      last_seen_at = excluded.last_seen_at,
      updated_at = excluded.updated_at,
      removed_at = null
    -- Unchanged rows are not rewritten: no dead tuples, no WAL, and they count as unchanged.
    where (${DATA_COLUMNS.map((c) => `r.${c}`).join(', ')})
          is distinct from (${DATA_COLUMNS.map((c) => `excluded.${c}`).join(', ')})
       or r.removed_at is not null
    returning r.${key}, (r.xmax = 0) as inserted
  ), saved as (
    insert into ${WRITTEN} (${key}, inserted) select ${key}, inserted from written
    returning inserted
  )
  select (select count(*)::int from latest) as distinct_ids, count(*)::int as written, (count(*) filter (where inserted))::int as inserted
  from saved`;

  /*
   * Replaces each staged row's id set, and marks updated the rows whose only change
   * was their set (the upsert skipped them as unchanged). Only rows that existed
   * before this batch can have ids to delete or be "set only", and of those only
   * the ones whose stored set differs from the listed one are touched: on a reload
   * most are unchanged, and comparing them costs one index scan each, where deleting
   * nothing and inserting every id again (each a conflict) cost two. Ids go to the
   * planner as arrays, so it probes the indexes instead of scanning a table (a hash join
   * over the whole table per batch made a first load quadratic).
   * $1: the load's instant, $2: the organisation.
   */
  const set = spec.idSet;
  const replaceSet =
    set &&
    `
  with ${LATEST}, existing as materialized (
    select e.${key}, e.set_ids from latest e
    where not exists (select 1 from ${WRITTEN} w where w.${key} = e.${key} and w.inserted)
  ), changed as materialized (
    select e.${key}, e.set_ids from existing e
    where e.set_ids is distinct from array(
      select a.${set.column} from ${set.table} a where a.org = $2 and a.${key} = e.${key} order by a.${set.column}
    )
  ), deleted as (
    delete from ${set.table} a
    using changed s
    where a.org = $2 and a.${key} = any (array(select ${key} from changed))
      and s.${key} = a.${key} and a.${set.column} <> all (s.set_ids)
    returning a.${key}
  ), added as (
    insert into ${set.table} (org, ${key}, ${set.column})
    select $2::text, s.${key}, unnest(s.set_ids) from latest s
    where not exists (select 1 from existing e where e.${key} = s.${key})
    union all
    select $2::text, s.${key}, unnest(s.set_ids) from changed s
    on conflict do nothing
    returning ${key}
  ), set_only as (
    update ${spec.table} r set updated_at = $1::timestamptz, last_seen_at = $1::timestamptz
    where r.org = $2 and r.${key} = any (array(
        select ${key} from deleted union select ${key} from added
        except select ${key} from ${WRITTEN}
      ))
    returning 1
  )
  select count(*)::int as set_only from set_only`;

  /*
   * A first load's statements: every staged row is new, so plain INSERTs (no conflict
   * arbitration, no dedup, no sets to compare). Run under a savepoint: an id already
   * stored, or staged twice (pages shifted while paged), fails them with a unique
   * violation, and the batch is written again by the upsert. $1: the load's instant, $2
   * (the set's: $1): the organisation.
   */
  const insertNew = `
  insert into ${spec.table} (org, ${key}, ${DATA_COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at)
  select $2::text, ${key}, ${DATA_COLUMNS.join(', ')}, $1::timestamptz, $1::timestamptz, $1::timestamptz from ${STAGE} order by ${key}`;
  const insertNewSet = set && `insert into ${set.table} (org, ${key}, ${set.column}) select $1::text, ${key}, unnest(set_ids) from ${STAGE}`;

  /** Every staged id, once, as seen by run $1 of organisation $2 (full mode), for markUnsighted. */
  const sight = `insert into ${spec.sightings} (org, run_id, ${key}) select distinct $2::text, $1::bigint, ${key} from ${STAGE}`;

  const statements: Statements = {
    stage: STAGE,
    stageColumns,
    kinds: shape.slice(1).map(([, type]) => kindOf(type)),
    prepare,
    upsert,
    replaceSet,
    insertNew,
    insertNewSet,
    sight,
  };
  built.set(spec as StagedTable<never>, statements);
  return statements;
}

const UNIQUE_VIOLATION = '23505';

/** The parts of a batch's write, for `npm run bench -- writepath` ('answers': the id set's statement). */
export type WritePhase = 'stage' | 'upsert' | 'answers' | 'sightings';

export interface UpsertStagedOptions {
  /** The instant of this load: first_seen_at / last_seen_at / updated_at of rows it writes. */
  seenAt: Date;
  /** Required with trackSightings. */
  runId?: number;
  /** Full mode: record every id seen, for markUnsighted at the run's end. */
  trackSightings?: boolean;
  /**
   * The rows are most likely all new (a first load into an empty table): try plain
   * INSERTs first, and fall back to the upsert when an id turns out to exist.
   */
  fresh?: boolean;
  /** Told how long each part of the write took (profiling). */
  onPhase?: (phase: WritePhase, ms: number) => void;
}

/** Each set of known fields in its own order: a record's keys usually come in that order. */
const knownOrder = new WeakMap<ReadonlySet<string>, readonly string[]>();

/** The fields of a record its schema does not name (`known`), or null when there are none: kept in a jsonb column. */
export function unknownFields(record: Record<string, unknown>, known: ReadonlySet<string>): Record<string, unknown> | null {
  let order = knownOrder.get(known);
  if (order === undefined) {
    order = [...known];
    knownOrder.set(known, order);
  }
  let extra: Record<string, unknown> | null = null;
  let next = 0;
  for (const key in record) {
    // The next known field in order is one comparison; any other key is looked up.
    if (key === order[next]) {
      next += 1;
      continue;
    }
    if (known.has(key)) continue;
    extra ??= {};
    extra[key] = record[key];
  }
  return extra;
}

/** Ids as a sorted set: `{a,b}` needs no copy for the usual zero or one id. */
export function idSet(ids: readonly string[]): readonly string[] {
  if (ids.length < 2) return ids;
  return [...new Set(ids)].sort();
}

/**
 * Records on their way to one warehouse transaction, held as the COPY text of the
 * staging table from the moment each is added: a page's records are garbage as soon as
 * the page is read, instead of living (and being promoted to the old generation) until
 * their batch is written, and the text sits in a buffer outside the JS heap that serves
 * batch after batch. Duplicates and order are settled by Postgres (`latest`).
 */
export class StagedBatch<T> {
  private readonly text: CopyText = takeCopyText();
  private rows = 0;
  private readonly statements: Statements;

  constructor(readonly spec: StagedTable<T>) {
    this.statements = statementsOf(spec);
  }

  /** Rows added, duplicates included. */
  get size(): number {
    return this.rows;
  }

  add(record: T): void {
    const values = this.spec.row(record);
    const kinds = this.statements.kinds;
    // One string per row (a write per field costs more: see copy-text.ts); ids, numbers
    // and instants need no escaping, text and jsonb do.
    let line = `${this.rows}`;
    for (let i = 0; i < values.length; i++) {
      const value = values[i]!;
      const kind = kinds[i];
      line += value === null ? '\t\\N' : kind === 0 ? `\t${value as string | number}` : kind === 2 ? (value ? '\tt' : '\tf') : kind === 3 ? `\t{${(value as readonly string[]).join(',')}}` : `\t${copyField(value)}`;
    }
    this.text.append(`${line}\n`);
    this.rows += 1;
  }

  /**
   * A page's records (those `keep` accepts, all without it), each as `add` writes it. The
   * loop over a page's records is here, not in the walk that calls it: the walk (a long
   * async function resumed once per page) then runs a few dozen bytecodes a page instead of
   * hundreds, and V8 no longer compiles the whole walk with this loop inlined into it again
   * and again as the walk's type feedback changes (5 TurboFan compiles, ~450 ms of a
   * 200,000-result bench's CPU); this small loop is compiled on its own.
   */
  addAll(records: readonly T[], keep?: ((record: T) => boolean) | undefined): void {
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (keep === undefined || keep(record)) this.add(record);
    }
  }

  /** Stages the batch on `client` (again, if a transaction is retried). */
  stage(client: pg.PoolClient): Promise<void> {
    return copyText(client, this.statements.stage, this.statements.stageColumns, this.text);
  }

  /** Call once the batch is written for good: its buffer serves a later batch. */
  release(): void {
    releaseCopyText(this.text);
  }
}

/**
 * Writes one batch (the caller batches, e.g. 2,000) on a client inside the caller's
 * transaction: COPY into a temp staging table, then one
 * `INSERT … ON CONFLICT DO UPDATE … WHERE … IS DISTINCT FROM …`. Each row's id set is
 * replaced by the listed one; a row whose only change is its set, or that was marked
 * removed and is listed again, counts as updated. Ids repeated in the batch are written
 * once (the last wins).
 */
export async function upsertStagedBatch<T>(tx: OrgTx, batch: StagedBatch<T>, options: UpsertStagedOptions): Promise<LoadCounts> {
  if (options.trackSightings && options.runId === undefined) throw new Error('upsertStagedBatch: trackSightings needs a runId');
  if (batch.size === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const { client, org } = tx;
  const statements = statementsOf(batch.spec);
  const onPhase = options.onPhase;
  let mark = onPhase ? performance.now() : 0;
  const lap = (phase: WritePhase): void => {
    if (!onPhase) return;
    const now = performance.now();
    onPhase(phase, now - mark);
    mark = now;
  };
  await client.query(statements.prepare);
  await batch.stage(client);
  lap('stage');
  if (options.fresh) {
    const inserted = await insertNew(tx, statements, options.seenAt, lap);
    if (inserted !== undefined) {
      if (options.trackSightings) {
        await client.query(statements.sight, [options.runId, org]);
        lap('sightings');
      }
      return { inserted, updated: 0, unchanged: 0 };
    }
  }
  // Each statement answers one row: no row per record comes back to this process.
  const upserted = await client.query<{ distinct_ids: number; written: number; inserted: number }>(statements.upsert, [options.seenAt, org]);
  const { distinct_ids: distinct, written, inserted } = upserted.rows[0]!;
  lap('upsert');
  let setOnly = 0;
  if (statements.replaceSet !== undefined) {
    const replaced = await client.query<{ set_only: number }>(statements.replaceSet, [options.seenAt, org]);
    setOnly = replaced.rows[0]!.set_only;
    lap('answers');
  }
  if (options.trackSightings) {
    await client.query(statements.sight, [options.runId, org]);
    lap('sightings');
  }

  const updated = written - inserted + setOnly;
  return { inserted, updated, unchanged: distinct - inserted - updated };
}

/** The staged rows by plain INSERTs, or undefined (and nothing written) when one of them exists already. */
async function insertNew({ client, org }: OrgTx, statements: Statements, seenAt: Date, lap: (phase: WritePhase) => void): Promise<number | undefined> {
  await client.query('savepoint trainsync_new_rows');
  try {
    const { rowCount } = await client.query(statements.insertNew, [seenAt, org]);
    lap('upsert');
    if (statements.insertNewSet !== undefined) {
      await client.query(statements.insertNewSet, [org]);
      lap('answers');
    }
    await client.query('release savepoint trainsync_new_rows');
    return rowCount ?? 0;
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNIQUE_VIOLATION) throw error;
    await client.query('rollback to savepoint trainsync_new_rows');
    return undefined;
  }
}

/** `upsertStagedBatch` of an array of records (webhooks, tests, benchmarks). */
export async function upsertStaged<T>(tx: OrgTx, spec: StagedTable<T>, records: readonly T[], options: UpsertStagedOptions): Promise<LoadCounts> {
  const batch = new StagedBatch(spec);
  for (const record of records) batch.add(record);
  const counts = await upsertStagedBatch(tx, batch, options);
  batch.release();
  return counts;
}

/**
 * Records keys as seen by a full-mode run without writing them, e.g. records that
 * failed validation: they exist, so they must not be marked removed.
 */
export async function recordSightings<T>({ client, org }: OrgTx, spec: StagedTable<T>, runId: number, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await client.query(`insert into ${spec.sightings} (org, run_id, ${spec.key}) select $3, $1, unnest($2::uuid[])`, [runId, keys, org]);
}

/**
 * Whether the table holds no row of the organisation (its first load, which needs
 * no sightings; another organisation's rows are keyed apart, so plain inserts still fit).
 */
export async function stagedTableEmpty<T>({ db, org }: OrgDb, spec: StagedTable<T>): Promise<boolean> {
  const { rows } = await sql<{ empty: boolean }>`select not exists (select 1 from ${sql.raw(spec.table)} where org = ${org}) as empty`.execute(db);
  return rows[0]!.empty;
}

/** Forgets a run's sightings without marking anything (a walk that did not finish). */
export async function clearSightings<T>({ client, org }: OrgTx, spec: StagedTable<T>, runId: number): Promise<void> {
  await client.query(`delete from ${spec.sightings} where org = $2 and run_id = $1`, [runId, org]);
}

/**
 * After a full-mode walk of every row of the organisation: marks its rows not sighted by the run
 * (`removed_at = now()`) and clears the run's sightings. Returns how many were marked.
 * Call it only when the walk completed; a partial walk would mark live rows.
 */
export async function markUnsighted<T>(tx: OrgTx, spec: StagedTable<T>, runId: number): Promise<number> {
  // A hash anti-join, always: on a table not analysed yet (a reload right after the first
  // load) `org = $2` looks selective to the planner (0.5 %), and it would loop over every
  // sighting once per row, minutes for 200,000. Off for this statement only.
  const { client, org } = tx;
  const { rows } = await client.query<{ was: string }>("select current_setting('enable_nestloop') as was, set_config('enable_nestloop', 'off', true)");
  const { rowCount } = await client.query(
    `update ${spec.table} r set removed_at = now()
     where r.org = $2 and r.removed_at is null
       -- A row written after the walk began (a webhook's) may sit on a page already passed.
       and r.last_seen_at < (select started_at from trainsync.runs where id = $1)
       -- A run is one organisation's: its sightings need no org test.
       and not exists (
         select 1 from ${spec.sightings} s where s.run_id = $1 and s.${spec.key} = r.${spec.key}
       )`,
    [runId, org],
  );
  await client.query("select set_config('enable_nestloop', $1, true)", [rows[0]!.was]);
  await clearSightings(tx, spec, runId);
  return rowCount ?? 0;
}

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of a batch's upsert and id-set statements, run inside
 * the caller's transaction (roll it back afterwards): the plans of the write path.
 */
export async function explainStagedBatch<T>({ client, org }: OrgTx, batch: StagedBatch<T>, seenAt: Date): Promise<{ upsert: string; answers: string }> {
  const statements = statementsOf(batch.spec);
  await client.query(statements.prepare);
  await batch.stage(client);
  const explain = async (text: string): Promise<string> => {
    const plan = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${text}`, [seenAt, org]);
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  };
  return { upsert: await explain(statements.upsert), answers: statements.replaceSet === undefined ? '' : await explain(statements.replaceSet) };
}
