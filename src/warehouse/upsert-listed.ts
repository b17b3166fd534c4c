import type pg from 'pg';
import { jsonbText } from './jsonb-text.ts';
import { dedupeById, type LoadCounts } from './load-counts.ts';

/**
 * The shared upsert of the small, fully listed tables (courses, filters, filter
 * answers, users): rows travel as one jsonb parameter (no COPY needed for a few
 * thousand rows), data columns are compared so unchanged rows count as unchanged, and
 * last_seen_at is then stamped on every listed row for markMissing… to compare.
 * Every table is keyed (org, id): each statement writes or filters the organisation
 * whose listing it is, a constant of the load.
 */
export interface ListedTable {
  /** Schema-qualified name, a trusted identifier from our code. */
  table: string;
  idColumn: string;
  /** Data columns and their SQL types, compared to decide "changed". */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
}

export interface ListedWrite {
  inserted: Set<string>;
  updated: Set<string>;
}

/** Inserts new rows and rewrites changed or removed ones; returns which ids it wrote. */
export async function upsertListed(
  client: pg.PoolClient,
  org: string,
  spec: ListedTable,
  rows: ReadonlyArray<Record<string, unknown>>,
  seenAt: Date,
): Promise<ListedWrite> {
  const result: ListedWrite = { inserted: new Set(), updated: new Set() };
  if (rows.length === 0) return result;
  const { table, idColumn } = spec;
  const names = spec.columns.map(([name]) => name);
  const recordType = [`${idColumn} uuid`, ...spec.columns.map(([name, type]) => `${name} ${type}`)].join(', ');
  const { rows: written } = await client.query<{ id: string; inserted: boolean }>(
    `insert into ${table} as t (org, ${idColumn}, ${names.join(', ')}, first_seen_at, last_seen_at, updated_at)
     select $3::text, ${idColumn}, ${names.join(', ')}, $2::timestamptz, $2::timestamptz, $2::timestamptz
     from jsonb_to_recordset($1::jsonb) as x(${recordType})
     on conflict (org, ${idColumn}) do update set
       ${names.map((n) => `${n} = excluded.${n}`).join(', ')},
       last_seen_at = excluded.last_seen_at, updated_at = excluded.updated_at, removed_at = null
     where (${names.map((n) => `t.${n}`).join(', ')}) is distinct from (${names.map((n) => `excluded.${n}`).join(', ')})
        or t.removed_at is not null
     returning t.${idColumn}::text as id, (t.xmax = 0) as inserted`,
    [jsonbText(rows), seenAt, org],
  );
  for (const row of written) (row.inserted ? result.inserted : result.updated).add(row.id);
  return result;
}

/**
 * A fully listed parent table whose rows carry a child set (a course's categories, a
 * group's courses). `replaceChildrenSql` gets $1 the children as jsonb, $2 the parent
 * ids and $3 the organisation, and returns the ids of parents whose child set changed.
 */
export interface ListingWithChildren<Parent> {
  spec: ListedTable;
  replaceChildrenSql: string;
  id(parent: Parent): string;
  row(parent: Parent): Record<string, unknown>;
  children(parent: Parent): readonly unknown[];
}

/**
 * Writes a listing of parents (the whole listing, or one page of it) and replaces their
 * child rows; a parent whose only change is its children counts as updated. Stamps
 * last_seen_at = seenAt on every listed parent, for markMissingListed.
 */
export async function upsertListedWithChildren<Parent>(
  client: pg.PoolClient,
  org: string,
  listing: ListingWithChildren<Parent>,
  parents: readonly Parent[],
  seenAt: Date,
): Promise<LoadCounts> {
  const batch = dedupeById(parents, listing.id);
  if (batch.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const ids = batch.map(listing.id);
  const written = await upsertListed(client, org, listing.spec, batch.map(listing.row), seenAt);
  const changed = await client.query<{ id: string }>(listing.replaceChildrenSql, [jsonbText(batch.flatMap(listing.children)), ids, org]);
  const childrenOnly = changed.rows.map((r) => r.id).filter((id) => !written.inserted.has(id) && !written.updated.has(id));
  await touchListed(client, org, listing.spec, ids, childrenOnly, seenAt);
  const inserted = written.inserted.size;
  const updated = written.updated.size + childrenOnly.length;
  return { inserted, updated, unchanged: ids.length - inserted - updated };
}

/**
 * Stamps last_seen_at on every listed id, and updated_at on `changed` ids (rows whose
 * only change was in a child table, e.g. a course's categories).
 */
export async function touchListed(
  client: pg.PoolClient,
  org: string,
  spec: ListedTable,
  ids: readonly string[],
  changed: readonly string[],
  seenAt: Date,
): Promise<void> {
  if (ids.length === 0) return;
  await client.query(
    `update ${spec.table} set last_seen_at = $2::timestamptz,
       updated_at = case when ${spec.idColumn} = any ($3::uuid[]) then $2::timestamptz else updated_at end
     where org = $4 and ${spec.idColumn} = any ($1::uuid[])
       and (last_seen_at is distinct from $2::timestamptz or ${spec.idColumn} = any ($3::uuid[]))`,
    [ids, seenAt, changed, org],
  );
}

/**
 * Marks the organisation's rows not listed at `seenAt` (last_seen_at earlier) as removed;
 * returns how many. Another organisation's rows are another listing's: never touched.
 */
export async function markMissingListed(client: pg.PoolClient, org: string, spec: ListedTable, seenAt: Date): Promise<number> {
  const { rowCount } = await client.query(
    `update ${spec.table} set removed_at = $1::timestamptz
     where org = $2 and removed_at is null and last_seen_at < $1::timestamptz`,
    [seenAt, org],
  );
  return rowCount ?? 0;
}
