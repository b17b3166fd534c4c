import { sql } from 'kysely';
import { jsonbText } from './jsonb-text.ts';
import { dedupeById, type LoadCounts } from './load-counts.ts';
import { keyColumns, markMissingListed, touchChanged, upsertListed, type ListedTable } from './upsert-listed.ts';
import type { OrgDb, OrgTx } from './scope.ts';

/**
 * The generic loader of a snapshot resource (courses, filters, groups, users, …): a
 * table described by a resource declaration (src/sync/resources/), written by the
 * shared jsonb upsert of upsert-listed.ts. What it does to a table is what the
 * per-resource loaders did: unchanged rows count as unchanged, a row whose only change
 * is in a child table counts as updated, every listed row gets last_seen_at, and rows a
 * complete listing left out are marked removed.
 */

/** Path values of the request that listed a record (`{groupId}` of `results/group/{groupId}`); empty for a list without any. */
export type PathValues = Readonly<Record<string, string>>;

/** A record as listed, with the path values of its request (its parent, for a list per parent). */
export interface Listed<T> {
  record: T;
  path: PathValues;
}

/**
 * A child set replaced with each listing of its parent (a course's categories, a
 * group's courses): rows keyed (org, parent key, `key` columns); `columns` beyond the key
 * are updated when they differ.
 */
export interface ChildSet<T> {
  kind: 'set';
  table: string;
  /** Every child column but org and the parent's key, in order, with SQL types. */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
  /** The child columns that, with the parent's key, identify a child row. */
  key: readonly string[];
  rows(record: T, path: PathValues): ReadonlyArray<Record<string, unknown>>;
}

/**
 * Children that are a listed table of their own (a filter's answers): first_seen_at,
 * last_seen_at and removed_at of their own, marked removed with their parent's table;
 * a change in one counts as an update of the parent named by `parentColumn`.
 */
export interface ChildListing<T> {
  kind: 'listed';
  table: ListedTable;
  /** The child column holding its parent's key. */
  parentColumn: string;
  rows(record: T, path: PathValues): ReadonlyArray<Record<string, unknown>>;
}

export interface ListingTable<T> {
  /** Schema-qualified name, a trusted identifier from our code; rows keyed (org, key…). */
  table: string;
  /** The key columns (uuid): one, or several for a list per parent (group_id, course_id). */
  key: readonly string[];
  /** Data columns and their SQL types, compared to decide "changed". */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
  /** The row of a record: its key and data columns by name. */
  row(record: T, path: PathValues): Record<string, unknown>;
  children?: ReadonlyArray<ChildSet<T> | ChildListing<T>> | undefined;
}

const byTable = new WeakMap<object, { listed: ListedTable; replace: Map<ChildSet<never>, string> }>();

function compiled<T>(spec: ListingTable<T>): { listed: ListedTable; replace: Map<ChildSet<never>, string> } {
  let found = byTable.get(spec);
  if (found === undefined) {
    const replace = new Map<ChildSet<never>, string>();
    for (const child of spec.children ?? []) if (child.kind === 'set') replace.set(child as ChildSet<never>, replaceChildrenSql(spec, child));
    found = { listed: { table: spec.table, idColumn: spec.key, columns: spec.columns }, replace };
    byTable.set(spec, found);
  }
  return found;
}

/**
 * Replaces the children of the listed parents of organisation $3 ($1 the children as
 * jsonb, $2 the parents' keys); returns the parents whose set changed.
 */
function replaceChildrenSql(parent: ListingTable<never>, child: ChildSet<never>): string {
  if (parent.key.length !== 1) throw new Error(`${parent.table}: a child set needs a parent with one key column`);
  const parentKey = parent.key[0]!;
  const identity = [parentKey, ...child.key];
  const values = child.columns.map(([name]) => name).filter((name) => !child.key.includes(name));
  const all = [parentKey, ...child.columns.map(([name]) => name)];
  const recordType = [`${parentKey} uuid`, ...child.columns.map(([name, type]) => `${name} ${type}`)].join(', ');
  const onConflict =
    values.length === 0
      ? 'on conflict do nothing'
      : `on conflict (org, ${identity.join(', ')}) do update set ${values.map((v) => `${v} = excluded.${v}`).join(', ')}
    where (${values.map((v) => `c.${v}`).join(', ')}) is distinct from (${values.map((v) => `excluded.${v}`).join(', ')})`;
  return `
  with listed as (
    select distinct on (${identity.join(', ')}) *
    from jsonb_to_recordset($1::jsonb) as x(${recordType})
  ), deleted as (
    delete from ${child.table} c
    where c.org = $3 and c.${parentKey} = any ($2::uuid[])
      and not exists (select 1 from listed l where ${identity.map((k) => `l.${k} = c.${k}`).join(' and ')})
    returning c.${parentKey}
  ), written as (
    insert into ${child.table} as c (org, ${all.join(', ')})
    select $3::text, ${all.join(', ')} from listed
    ${onConflict}
    returning c.${parentKey}
  )
  select ${parentKey}::text as id from deleted union select ${parentKey}::text from written`;
}

/** The key of a row as upsertListed reports it: the uuid's text, or the key columns' joined by `|`. */
function keyOf(key: readonly string[], row: Record<string, unknown>): string {
  return key.map((k) => String(row[k])).join('|');
}

/**
 * Writes a listing (the whole listing, or one batch of it) of one organisation and
 * replaces its children; counts are per distinct key (a record listed twice counts once,
 * the last wins). Stamps last_seen_at = seenAt on every listed row, for markMissingListing.
 */
export async function upsertListing<T>(tx: OrgTx, spec: ListingTable<T>, items: readonly Listed<T>[], seenAt: Date): Promise<LoadCounts> {
  const { listed, replace } = compiled(spec);
  const rows = dedupeById(
    items.map((item) => ({ item, row: spec.row(item.record, item.path) })),
    ({ row }) => keyOf(spec.key, row),
  );
  if (rows.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const { client, org } = tx;
  const written = await upsertListed(tx, listed, rows.map(({ row }) => row), seenAt);
  const childChanged = new Set<string>();
  for (const child of spec.children ?? []) {
    const children = rows.flatMap(({ item }) => child.rows(item.record, item.path));
    if (child.kind === 'set') {
      const changed = await client.query<{ id: string }>(replace.get(child as ChildSet<never>)!, [jsonbText(children), rows.map(({ row }) => row[spec.key[0]!]), org]);
      for (const { id } of changed.rows) childChanged.add(id);
    } else {
      const childKey = keyColumns(child.table);
      const childRows = dedupeById(children, (row) => keyOf(childKey, row));
      const childWritten = await upsertListed(tx, child.table, childRows, seenAt);
      const parentOf = new Map(childRows.map((row) => [keyOf(childKey, row), String(row[child.parentColumn])]));
      for (const id of [...childWritten.inserted, ...childWritten.updated]) childChanged.add(parentOf.get(id)!);
    }
  }
  const childrenOnly = [...childChanged].filter((id) => !written.inserted.has(id) && !written.updated.has(id));
  // Every listed row (and listed child) has its last_seen_at from the upserts: only a parent
  // whose children alone changed needs a statement more.
  await touchChanged(tx, listed, childrenOnly, seenAt);
  const inserted = written.inserted.size;
  const updated = written.updated.size + childrenOnly.length;
  return { inserted, updated, unchanged: rows.length - inserted - updated };
}

/**
 * After a complete listing stamped with `seenAt`: marks the organisation's rows (and
 * listed children) it did not include as removed. Returns how many rows were marked.
 * Never after a filtered listing.
 */
export async function markMissingListing<T>(tx: OrgTx, spec: ListingTable<T>, seenAt: Date): Promise<number> {
  let removed = await markMissingListed(tx, compiled(spec).listed, seenAt);
  for (const child of spec.children ?? []) if (child.kind === 'listed') removed += await markMissingListed(tx, child.table, seenAt);
  return removed;
}

/** The keys of the organisation's rows not marked removed, in key order: the parents of a list per parent. */
export async function currentKeys({ db, org }: OrgDb, spec: Pick<ListingTable<never>, 'table' | 'key'>): Promise<string[]> {
  if (spec.key.length !== 1) throw new Error(`${spec.table}: only a table with one key column can be a parent`);
  const key = sql.ref(spec.key[0]!);
  const { rows } = await sql<{ id: string }>`select ${key}::text as id from ${sql.table(spec.table)} where org = ${org} and removed_at is null order by ${key}`.execute(db);
  return rows.map((r) => r.id);
}
