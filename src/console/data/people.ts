import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';

type Db = Kysely<Database>;

export interface StatusByGroup {
  grp: string;
  status: string;
  n: number;
}

const ATTRIBUTES = ['department', 'location'] as const;
export type GroupBy = 'course' | (typeof ATTRIBUTES)[number];

export function parseGroupBy(value: string | undefined): GroupBy {
  return value === 'department' || value === 'location' ? value : 'course';
}

/** Assignment status counts of current active employees, by course or by an HR attribute. */
export async function assignmentStatusBy(db: Db, by: GroupBy): Promise<StatusByGroup[]> {
  const key = by === 'course' ? sql`course_name` : sql`coalesce(attributes->>${by}, '(none)')`;
  const { rows } = await sql<StatusByGroup>`
    select ${key} as grp, status, count(*)::int as n from training.assignment_status
     where employee_status = 'active' group by 1, 2 order by 1, 2 limit 2000`.execute(db);
  return rows;
}
