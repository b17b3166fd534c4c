import type pg from 'pg';
import type { Course } from '../platform/schemas.ts';
import type { LoadCounts } from './load-counts.ts';
import { markMissingListed, upsertListedWithChildren, type ListedTable, type ListingWithChildren } from './upsert-listed.ts';

const COURSES: ListedTable = {
  table: 'training.courses',
  idColumn: 'course_id',
  columns: [
    ['name', 'text'],
    ['pass_rate', 'smallint'],
  ],
};

// Replaces the categories of the listed courses of organisation $3; returns the courses
// whose set changed.
const REPLACE_CATEGORIES = `
  with listed as (
    select * from jsonb_to_recordset($1::jsonb) as x(course_id uuid, category_type text, category_name text)
  ), deleted as (
    delete from training.course_categories c
    where c.org = $3 and c.course_id = any ($2::uuid[])
      and not exists (
        select 1 from listed l
        where l.course_id = c.course_id and l.category_type = c.category_type and l.category_name = c.category_name
      )
    returning c.course_id
  ), added as (
    insert into training.course_categories (org, course_id, category_type, category_name)
    select $3::text, course_id, category_type, category_name from listed
    on conflict do nothing
    returning course_id
  )
  select course_id::text as id from deleted union select course_id::text from added`;

const COURSE_LISTING: ListingWithChildren<Course> = {
  spec: COURSES,
  replaceChildrenSql: REPLACE_CATEGORIES,
  id: (c) => c.id,
  row: (c) => ({ course_id: c.id, name: c.name, pass_rate: c.passRate }),
  children: (c) => c.categories.map((cat) => ({ course_id: c.id, category_type: cat.type, category_name: cat.name })),
};

/** Writes courses and replaces their categories; a change of categories alone counts as updated. */
export async function upsertCourses(client: pg.PoolClient, org: string, courses: readonly Course[], seenAt: Date): Promise<LoadCounts> {
  return upsertListedWithChildren(client, org, COURSE_LISTING, courses, seenAt);
}

/**
 * After a complete listing stamped with `seenAt`: marks courses it did not include
 * (removed_at = seenAt). Returns how many. Do not call after a filtered listing.
 */
export async function markMissingCourses(client: pg.PoolClient, org: string, seenAt: Date): Promise<number> {
  return markMissingListed(client, org, COURSES, seenAt);
}
