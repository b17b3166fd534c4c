import type pg from 'pg';
import type { Group } from '../platform/schemas.ts';
import type { LoadCounts } from './load-counts.ts';
import { markMissingListed, upsertListedWithChildren, type ListedTable, type ListingWithChildren } from './upsert-listed.ts';

const GROUPS: ListedTable = {
  table: 'training.groups',
  idColumn: 'group_id',
  columns: [['name', 'text']],
};

// Replaces the courses of the listed groups of organisation $3 (a renamed course counts
// as a change); returns the groups whose set changed.
const REPLACE_COURSES = `
  with listed as (
    select distinct on (group_id, course_id) *
    from jsonb_to_recordset($1::jsonb) as x(group_id uuid, course_id uuid, course_name text)
  ), deleted as (
    delete from training.group_courses gc
    where gc.org = $3 and gc.group_id = any ($2::uuid[])
      and not exists (select 1 from listed l where l.group_id = gc.group_id and l.course_id = gc.course_id)
    returning gc.group_id
  ), written as (
    insert into training.group_courses as gc (org, group_id, course_id, course_name)
    select $3::text, group_id, course_id, course_name from listed
    on conflict (org, group_id, course_id) do update set course_name = excluded.course_name
    where gc.course_name is distinct from excluded.course_name
    returning gc.group_id
  )
  select group_id::text as id from deleted union select group_id::text from written`;

const GROUP_LISTING: ListingWithChildren<Group> = {
  spec: GROUPS,
  replaceChildrenSql: REPLACE_COURSES,
  id: (g) => g.id,
  row: (g) => ({ group_id: g.id, name: g.name }),
  children: (g) => g.courses.map((c) => ({ group_id: g.id, course_id: c.id, course_name: c.name })),
};

/** Writes groups and replaces their courses; a change of courses alone counts as updated. */
export async function upsertGroups(client: pg.PoolClient, org: string, groups: readonly Group[], seenAt: Date): Promise<LoadCounts> {
  return upsertListedWithChildren(client, org, GROUP_LISTING, groups, seenAt);
}

/**
 * After a complete listing stamped with `seenAt`: marks groups it did not include
 * (removed_at = seenAt). Their courses are kept, as they were last listed.
 */
export async function markMissingGroups(client: pg.PoolClient, org: string, seenAt: Date): Promise<number> {
  return markMissingListed(client, org, GROUPS, seenAt);
}
