/**
 * The store of the sync state other than runs (runs-store.ts): checkpoints, watermarks,
 * unfinished windows and quarantined records (schema `trainsync`). Every statement that
 * names these tables is here (test/table-owners.test.ts keeps it so).
 *
 * State is per organisation: every function that names state by a key, a resource or a
 * job takes the organisation's handle first (OrgDb: `ctx.scope` in a job, or the `tx` of
 * its transaction, so a checkpoint commits with its rows) and writes or filters `org` with
 * the organisation it carries. Functions given a run id take Kysely: run ids are one
 * sequence across organisations, so an id names one organisation's run. Values read back
 * are parsed at this edge.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { z } from 'zod';
import type { RecordProblem } from '../platform/types.ts';
import type { Database } from '../warehouse/database.ts';
import { jsonbText } from '../warehouse/jsonb-text.ts';
import type { OrgDb } from '../warehouse/scope.ts';

type Db = Kysely<Database>;

/**
 * The checkpoint's value, parsed by `schema`; undefined when there is none. Keys are
 * chosen by the job, e.g. 'results:window:2024-01-01..2024-01-31'.
 */
export async function getCheckpoint<T>({ db, org }: OrgDb, key: string, schema: z.ZodType<T>): Promise<T | undefined> {
  const row = await db.selectFrom('trainsync.checkpoints').select('value').where('org', '=', org).where('key', '=', key).executeTakeFirst();
  return row === undefined ? undefined : schema.parse(row.value);
}

/** Creates or replaces a checkpoint; call it on the transaction that writes the rows it covers. */
export async function saveCheckpoint({ db, org }: OrgDb, key: string, value: unknown, runId: number | null): Promise<void> {
  const row = { org, key, value: jsonbText(value ?? null), run_id: runId, updated_at: sql<Date>`now()` };
  await db
    .insertInto('trainsync.checkpoints')
    .values(row)
    .onConflict((oc) => oc.columns(['org', 'key']).doUpdateSet({ value: row.value, run_id: runId, updated_at: row.updated_at }))
    .execute();
}

/** The keys of every checkpoint whose key starts with `prefix` (literally), sorted. */
export async function listCheckpoints({ db, org }: OrgDb, prefix: string): Promise<string[]> {
  const rows = await db.selectFrom('trainsync.checkpoints').select('key').where('org', '=', org).where(sql<boolean>`starts_with(key, ${prefix})`).orderBy('key').execute();
  return rows.map((row) => row.key);
}

/** Deletes every checkpoint whose key starts with `prefix` (literally); returns how many. */
export async function deleteCheckpoints({ db, org }: OrgDb, prefix: string): Promise<number> {
  const result = await db.deleteFrom('trainsync.checkpoints').where('org', '=', org).where(sql<boolean>`starts_with(key, ${prefix})`).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The resource's watermark (e.g. the last fully synced date), or undefined. */
export async function getWatermark({ db, org }: OrgDb, resource: string): Promise<string | undefined> {
  const row = await db.selectFrom('trainsync.watermarks').select('value').where('org', '=', org).where('resource', '=', resource).executeTakeFirst();
  return row?.value;
}

export async function setWatermark({ db, org }: OrgDb, resource: string, value: string): Promise<void> {
  await db
    .insertInto('trainsync.watermarks')
    .values({ org, resource, value, updated_at: sql<Date>`now()` })
    .onConflict((oc) => oc.columns(['org', 'resource']).doUpdateSet({ value, updated_at: sql<Date>`now()` }))
    .execute();
}

/** Every watermark of the organisation, by resource (for `status`). */
export async function listWatermarks({ db, org }: OrgDb): Promise<Array<{ resource: string; value: string; updatedAt: Date }>> {
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
export async function quarantineRecords({ db, org }: OrgDb, runId: number | null, problems: readonly QuarantinedRecord[]): Promise<number> {
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

/** A window a run could not finish, and why. */
export interface UnfinishedWindow {
  key: string;
  reason: string;
  runId: number | null;
  recordedAt: Date;
}

/** The windows of a resource that earlier runs could not finish, oldest first. */
export async function listUnfinishedWindows({ db, org }: OrgDb, resource: string): Promise<UnfinishedWindow[]> {
  const rows = await db.selectFrom('trainsync.unfinished_windows').selectAll().where('org', '=', org).where('resource', '=', resource).orderBy('window_key').execute();
  return rows.map((r) => ({ key: r.window_key, reason: r.reason, runId: r.run_id, recordedAt: r.recorded_at }));
}

/**
 * Replaces what a run leaves unfinished: the windows it read to the end are cleared,
 * the ones it could not are (re)recorded. Call it in the run's finishing transaction.
 */
export async function recordUnfinishedWindows(
  { db, org }: OrgDb,
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

/**
 * The distinct records run `runId` quarantined (a record read again in the run is one row), as an
 * expression: the runs' store adds it in the statement that closes the run, so the count costs no
 * statement of its own.
 */
export function quarantinedInRun(runId: number): RawBuilder<number> {
  return sql<number>`(select count(*) from trainsync.quarantine q where q.run_id = ${runId})::int`;
}

/** The organisation's quarantined records per resource (for `status`). */
export async function quarantineCounts({ db, org }: OrgDb): Promise<QuarantineCount[]> {
  const rows = await db
    .selectFrom('trainsync.quarantine')
    .select(['resource', sql<number>`count(*)`.as('count'), sql<Date>`max(last_seen_at)`.as('last_seen_at')])
    .where('org', '=', org)
    .groupBy('resource')
    .orderBy('resource')
    .execute();
  return rows.map((r) => ({ resource: r.resource, count: Number(r.count), lastSeenAt: r.last_seen_at }));
}

/** The console's row of a quarantined record: the raw JSON's first 400 characters. */
export interface QuarantinedRow {
  id: number;
  resource: string;
  message: string;
  page: number | null;
  raw_text: string;
  quarantined_at: Date;
  times_seen: number;
}

/** The records a run quarantined, by id (the console's run page). */
export async function runQuarantine({ db, org }: OrgDb, runId: number, limit = 100): Promise<QuarantinedRow[]> {
  const { rows } = await sql<QuarantinedRow>`
    select id, resource, message, page, left(raw::text, 400) as raw_text, quarantined_at, times_seen
      from trainsync.quarantine where org = ${org} and run_id = ${runId} order by id limit ${limit}`.execute(db);
  return rows;
}

/** The windows a run left unfinished, by key (the console's run page). */
export async function runUnfinishedWindows({ db, org }: OrgDb, runId: number): Promise<Array<{ window_key: string; reason: string; recorded_at: Date }>> {
  const { rows } = await sql<{ window_key: string; reason: string; recorded_at: Date }>`
    select window_key, reason, recorded_at from trainsync.unfinished_windows where org = ${org} and run_id = ${runId} order by window_key`.execute(db);
  return rows;
}

/** The watermarks of `orgs`, by organisation (in `orgs`' order) and resource: one statement for all (`status`). */
export async function watermarksOf(db: Db, orgs: readonly string[]): Promise<Array<{ org: string; resource: string; value: string; updatedAt: Date }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{ org: string; resource: string; value: string; updated_at: Date }>`
    select w.org, w.resource, w.value, w.updated_at from trainsync.watermarks w
    join unnest(${[...orgs]}::text[]) with ordinality as c(slug, n) on c.slug = w.org
    order by c.n, w.resource`.execute(db);
  return result.rows.map((w) => ({ org: w.org, resource: w.resource, value: w.value, updatedAt: w.updated_at }));
}

/** Quarantined records of `orgs`, counted by organisation (in `orgs`' order) and resource: one statement for all (`status`). */
export async function quarantineOf(db: Db, orgs: readonly string[]): Promise<Array<{ org: string; resource: string; count: number; lastSeenAt: Date }>> {
  if (orgs.length === 0) return [];
  const result = await sql<{ org: string; resource: string; count: number; last_seen_at: Date }>`
    select q.org, q.resource, count(*)::int as count, max(q.last_seen_at) as last_seen_at from trainsync.quarantine q
    join unnest(${[...orgs]}::text[]) with ordinality as c(slug, n) on c.slug = q.org
    group by c.n, q.org, q.resource order by c.n, q.resource`.execute(db);
  return result.rows.map((r) => ({ org: r.org, resource: r.resource, count: r.count, lastSeenAt: r.last_seen_at }));
}

/** How many windows each organisation of `orgs` has left unfinished (any resource), by slug; those with none are absent. One statement. */
export async function unfinishedWindowCounts(db: Db, orgs: readonly string[]): Promise<Map<string, number>> {
  if (orgs.length === 0) return new Map();
  const { rows } = await sql<{ org: string; n: number }>`
    select org, count(*)::int as n from trainsync.unfinished_windows where org = any(${[...orgs]}::text[]) group by org`.execute(db);
  return new Map(rows.map((r) => [r.org, r.n]));
}

/** The unfinished windows of every windowed resource of each organisation of `orgs`, by organisation, resource, then window key: one statement for all (`status`). */
export async function unfinishedWindowsOf(db: Db, orgs: readonly string[]): Promise<Array<UnfinishedWindow & { org: string; resource: string }>> {
  if (orgs.length === 0) return [];
  const { rows } = await sql<{ org: string; resource: string; window_key: string; reason: string; run_id: number | null; recorded_at: Date }>`
    select org, resource, window_key, reason, run_id, recorded_at from trainsync.unfinished_windows
    where org = any(${[...orgs]}::text[]) order by org, resource, window_key`.execute(db);
  return rows.map((r) => ({ org: r.org, resource: r.resource, key: r.window_key, reason: r.reason, runId: r.run_id, recordedAt: r.recorded_at }));
}
