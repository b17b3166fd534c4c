import { fitTable } from './fit-table.ts';
import { sql } from 'kysely';
import type { OrgDb } from '../../warehouse/scope.ts';

const STATUSES = ['passed', 'completed', 'failed', 'in_progress', 'not_started'] as const;

interface CourseCounts {
  course_id: string;
  course_name: string | null;
  assigned: number;
  passed: number;
  completed: number;
  failed: number;
  in_progress: number;
  not_started: number;
}

interface SliceRow {
  employee_id: string;
  email: string;
  course_name: string | null;
  status: string;
  completed_at: Date | null;
  score: number | null;
  maximum_score: number | null;
}

/**
 * The demo's view of one organisation's `training.assignment_status`: status counts of the `courses` most
 * assigned courses, and one example row of each status they have. Empty text when no
 * assignment is known yet (no groups listed, no membership applied, no employees).
 */
export async function renderAssignmentStatus({ db, org }: OrgDb, courses = 2): Promise<string> {
  const { rows: counts } = await sql<CourseCounts>`
    select course_id, course_name, count(*)::int as assigned,
      ${sql.join(STATUSES.map((s) => sql`count(*) filter (where status = ${s})::int as ${sql.ref(s)}`))}
    from training.assignment_status
    where org = ${org}
    group by course_id, course_name
    order by assigned desc, course_name, course_id
    limit ${courses}`.execute(db);
  if (counts.length === 0) return '';
  // Drawn to the terminal's width (at most 100): a long course name wraps in its column.
  const table = fitTable(['course', 'assigned', ...STATUSES], counts.map((c) => [c.course_name ?? c.course_id, c.assigned, ...STATUSES.map((s) => c[s])]), { flex: [0] });
  const { rows: slice } = await sql<SliceRow>`
    select * from (
      select distinct on (course_id, status) employee_id, email, course_name, status, completed_at, score, maximum_score, course_id
      from training.assignment_status
      where org = ${org} and course_id = any (${counts.map((c) => c.course_id)}::uuid[])
      order by course_id, status, employee_id
    ) one_per_status
    order by course_name, array_position(${[...STATUSES]}::text[], status)`.execute(db);
  const examples = fitTable(
    ['employee', 'email', 'course', 'status', 'completed', 'score'],
    slice.map((r) => [
      r.employee_id,
      r.email,
      r.course_name ?? '',
      r.status,
      r.completed_at ? r.completed_at.toISOString().slice(0, 10) : '',
      r.score === null ? '' : `${r.score}${r.maximum_score === null ? '' : `/${r.maximum_score}`}`,
    ]),
    { flex: [2, 1] },
  );
  return `${table}\none employee per status:\n${examples}\n`;
}
