import type { OrgTx } from './scope.ts';
import { jsonbText } from './jsonb-text.ts';

/**
 * The shared upsert of the small, fully listed tables (courses, filters, filter
 * answers, users, groups; driven by load-listing.ts): rows travel as one jsonb parameter (no COPY needed for a few
 * thousand rows), data columns are compared so unchanged rows count as unchanged, and
 * last_seen_at is stamped on every listed row in the same statement for markMissing… to compare.
 * Every table is keyed (org, id): each statement writes or filters the organisation
 * whose listing it is, a constant of the load.
 */
export interface ListedTable {
  /** Schema-qualified name, a trusted identifier from our code. */
  table: string;
  /** The key column (uuid), or columns for a list per parent (e.g. group_id, course_id); ids are their text joined by `|`. */
  idColumn: string | readonly string[];
  /** Data columns and their SQL types, compared to decide "changed". */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
}

export interface ListedWrite {
  inserted: Set<string>;
  updated: Set<string>;
}

export function keyColumns(spec: ListedTable): readonly string[] {
  return typeof spec.idColumn === 'string' ? [spec.idColumn] : spec.idColumn;
}

/** A row's id as text: the uuid's, or the key columns' joined by `|` (as the callers join them). */
function keyText(keys: readonly string[], prefix = ''): string {
  return keys.length === 1 ? `${prefix}${keys[0]}::text` : `concat_ws('|', ${keys.map((k) => `${prefix}${k}::text`).join(', ')})`;
}

/**
 * `ids` ($n, text joined by `|`) as a condition on the key: `= any (uuid[])` for one
 * key column, so the primary key's index serves it; several columns are split apart.
 */
function keyIn(keys: readonly string[], param: string): string {
  if (keys.length === 1) return `${keys[0]} = any (${param}::uuid[])`;
  return `(${keys.join(', ')}) in (select ${keys.map((_k, i) => `split_part(id, '|', ${i + 1})::uuid`).join(', ')} from unnest(${param}::text[]) as id)`;
}

/**
 * Inserts new rows, rewrites changed or removed ones, and stamps last_seen_at = seenAt on
 * every row listed (so markMissingListed leaves it alone), in one statement; returns which
 * ids it inserted and which it changed. A row counts as changed when its data columns
 * differ or it was marked removed; only then does updated_at move. The change is read back
 * from updated_at = seenAt, so a row listed again in a later batch of the same listing
 * (the same seenAt) after one that changed it counts as changed again.
 */
export async function upsertListed(
  { client, org }: OrgTx,
  spec: ListedTable,
  rows: ReadonlyArray<Record<string, unknown>>,
  seenAt: Date,
): Promise<ListedWrite> {
  const result: ListedWrite = { inserted: new Set(), updated: new Set() };
  if (rows.length === 0) return result;
  const { rows: written } = await client.query<{ id: string; inserted: boolean; changed: boolean }>(upsertSql(spec), [jsonbText(rows), seenAt, org]);
  for (const row of written) {
    if (row.inserted) result.inserted.add(row.id);
    else if (row.changed) result.updated.add(row.id);
  }
  return result;
}

/** The upsert's text for a table, built once per table description. */
const upsertTexts = new WeakMap<ListedTable, string>();

function upsertSql(spec: ListedTable): string {
  let text = upsertTexts.get(spec);
  if (text !== undefined) return text;
  const { table } = spec;
  const keys = keyColumns(spec);
  const idColumn = keys.join(', ');
  const names = spec.columns.map(([name]) => name);
  const recordType = [...keys.map((k) => `${k} uuid`), ...spec.columns.map(([name, type]) => `${name} ${type}`)].join(', ');
  const changed = `(${names.map((n) => `t.${n}`).join(', ')}) is distinct from (${names.map((n) => `excluded.${n}`).join(', ')}) or t.removed_at is not null`;
  text = `insert into ${table} as t (org, ${idColumn}, ${names.join(', ')}, first_seen_at, last_seen_at, updated_at)
     select $3::text, ${idColumn}, ${names.join(', ')}, $2::timestamptz, $2::timestamptz, $2::timestamptz
     from jsonb_to_recordset($1::jsonb) as x(${recordType})
     on conflict (org, ${idColumn}) do update set
       ${names.map((n) => `${n} = excluded.${n}`).join(', ')},
       last_seen_at = excluded.last_seen_at,
       updated_at = case when ${changed} then excluded.updated_at else t.updated_at end,
       removed_at = null
     returning ${keyText(keys, 't.')} as id, (t.xmax = 0) as inserted, (t.updated_at = $2::timestamptz) as changed`;
  upsertTexts.set(spec, text);
  return text;
}

/**
 * Stamps updated_at = seenAt on `changed` ids: rows whose only change was in a child table
 * (e.g. a course's categories). upsertListed has stamped last_seen_at on every listed row.
 */
export async function touchChanged({ client, org }: OrgTx, spec: ListedTable, changed: readonly string[], seenAt: Date): Promise<void> {
  if (changed.length === 0) return;
  await client.query(`update ${spec.table} set updated_at = $2::timestamptz where org = $3 and ${keyIn(keyColumns(spec), '$1')}`, [changed, seenAt, org]);
}

/**
 * Marks the organisation's rows not listed at `seenAt` (last_seen_at earlier) as removed;
 * returns how many. Another organisation's rows are another listing's: never touched.
 */
export async function markMissingListed({ client, org }: OrgTx, spec: ListedTable, seenAt: Date): Promise<number> {
  const { rowCount } = await client.query(
    `update ${spec.table} set removed_at = $1::timestamptz
     where org = $2 and removed_at is null and last_seen_at < $1::timestamptz`,
    [seenAt, org],
  );
  return rowCount ?? 0;
}
