import type { OrgTx } from './scope.ts';
import { jsonbText } from './jsonb-text.ts';

/**
 * The shared upsert of the small, fully listed tables (courses, filters, filter
 * answers, users, groups; driven by load-listing.ts): rows travel as one jsonb parameter (no COPY needed for a few
 * thousand rows), data columns are compared so unchanged rows count as unchanged, and
 * last_seen_at is then stamped on every listed row for markMissing… to compare.
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

/** Inserts new rows and rewrites changed or removed ones; returns which ids it wrote. */
export async function upsertListed(
  { client, org }: OrgTx,
  spec: ListedTable,
  rows: ReadonlyArray<Record<string, unknown>>,
  seenAt: Date,
): Promise<ListedWrite> {
  const result: ListedWrite = { inserted: new Set(), updated: new Set() };
  if (rows.length === 0) return result;
  const { table } = spec;
  const keys = keyColumns(spec);
  const idColumn = keys.join(', ');
  const names = spec.columns.map(([name]) => name);
  const recordType = [...keys.map((k) => `${k} uuid`), ...spec.columns.map(([name, type]) => `${name} ${type}`)].join(', ');
  const { rows: written } = await client.query<{ id: string; inserted: boolean }>(
    `insert into ${table} as t (org, ${idColumn}, ${names.join(', ')}, first_seen_at, last_seen_at, updated_at)
     select $3::text, ${idColumn}, ${names.join(', ')}, $2::timestamptz, $2::timestamptz, $2::timestamptz
     from jsonb_to_recordset($1::jsonb) as x(${recordType})
     on conflict (org, ${idColumn}) do update set
       ${names.map((n) => `${n} = excluded.${n}`).join(', ')},
       last_seen_at = excluded.last_seen_at, updated_at = excluded.updated_at, removed_at = null
     where (${names.map((n) => `t.${n}`).join(', ')}) is distinct from (${names.map((n) => `excluded.${n}`).join(', ')})
        or t.removed_at is not null
     returning ${keyText(keys, 't.')} as id, (t.xmax = 0) as inserted`,
    [jsonbText(rows), seenAt, org],
  );
  for (const row of written) (row.inserted ? result.inserted : result.updated).add(row.id);
  return result;
}

/**
 * Stamps last_seen_at on every listed id, and updated_at on `changed` ids (rows whose
 * only change was in a child table, e.g. a course's categories).
 */
export async function touchListed(
  { client, org }: OrgTx,
  spec: ListedTable,
  ids: readonly string[],
  changed: readonly string[],
  seenAt: Date,
): Promise<void> {
  if (ids.length === 0) return;
  const keys = keyColumns(spec);
  await client.query(
    `update ${spec.table} set last_seen_at = $2::timestamptz,
       updated_at = case when ${keyIn(keys, '$3')} then $2::timestamptz else updated_at end
     where org = $4 and ${keyIn(keys, '$1')}
       and (last_seen_at is distinct from $2::timestamptz or ${keyIn(keys, '$3')})`,
    [ids, seenAt, changed, org],
  );
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
