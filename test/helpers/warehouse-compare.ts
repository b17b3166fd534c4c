import type pg from 'pg';
import { allResults, type SimulatorState } from '../../src/simulator/index.ts';

/**
 * Field-by-field views of the simulator's data and of the warehouse, in one shape,
 * sorted by id, so a test can `expect(warehouse).toEqual(simulator)`.
 */

const iso = (value: string | Date | null): string | null => (value === null ? null : new Date(value).toISOString());
const byId = <T extends { id: string }>(rows: T[]): T[] => rows.sort((a, b) => a.id.localeCompare(b.id));

export interface ComparableResult {
  id: string;
  userId: string;
  courseId: string;
  multiCourseResultId: string | null;
  isComplete: boolean;
  dateCompleted: string | null;
  score: number | null;
  maximumScore: number | null;
  passRate: number | null;
  courseType: string | null;
  answers: string[];
}

export function simulatorResults(state: SimulatorState, exceptIds: ReadonlySet<string> = new Set()): ComparableResult[] {
  return byId(
    allResults(state)
      .filter((r) => !exceptIds.has(r.id))
      .map((r) => ({
        id: r.id.toLowerCase(),
        userId: r.userId.toLowerCase(),
        courseId: r.courseId.toLowerCase(),
        multiCourseResultId: r.multiCourseResultId?.toLowerCase() ?? null,
        isComplete: r.isComplete,
        dateCompleted: iso(r.dateCompleted),
        score: r.score,
        maximumScore: r.maximumScore,
        passRate: r.passRate,
        courseType: r.courseType,
        answers: [...new Set(r.resultFilters.map((a) => a.toLowerCase()))].sort(),
      })),
  );
}

/** The organisation's current results (default: `default`), comparable with the simulator's. */
export async function warehouseResults(pool: pg.Pool, org = 'default'): Promise<ComparableResult[]> {
  const { rows } = await pool.query<{
    result_id: string; user_id: string; course_id: string; multi_course_result_id: string | null; is_complete: boolean;
    date_completed: Date | null; score: number | null; maximum_score: number | null; pass_rate: number | null; course_type: string | null; answers: string[];
  }>(`select r.result_id, r.user_id, r.course_id, r.multi_course_result_id, r.is_complete, r.date_completed, r.score,
            r.maximum_score, r.pass_rate, r.course_type,
            coalesce(array_agg(a.answer_id::text order by a.answer_id) filter (where a.answer_id is not null), '{}') as answers
       from training.results r left join training.result_filter_answers a using (org, result_id)
      where r.org = $1 and r.removed_at is null
      group by r.org, r.result_id`, [org]);
  return byId(
    rows.map((r) => ({
      id: r.result_id,
      userId: r.user_id,
      courseId: r.course_id,
      multiCourseResultId: r.multi_course_result_id,
      isComplete: r.is_complete,
      dateCompleted: iso(r.date_completed),
      score: r.score,
      maximumScore: r.maximum_score,
      passRate: r.pass_rate,
      courseType: r.course_type,
      answers: r.answers,
    })),
  );
}

export function simulatorCourses(state: SimulatorState): unknown[] {
  return byId(
    state.courses.map((c) => ({
      id: c.id.toLowerCase(),
      name: c.name,
      passRate: c.passRate,
      categories: c.categories.map((k) => `${k.type}:${k.name}`).sort(),
    })),
  );
}

export async function warehouseCourses(pool: pg.Pool, org = 'default'): Promise<unknown[]> {
  const { rows } = await pool.query<{ course_id: string; name: string; pass_rate: number | null; categories: string[] }>(
    `select c.course_id, c.name, c.pass_rate,
            coalesce(array_agg(k.category_type || ':' || k.category_name order by k.category_type || ':' || k.category_name)
                     filter (where k.course_id is not null), '{}') as categories
       from training.courses c left join training.course_categories k using (org, course_id)
      where c.org = $1 and c.removed_at is null group by c.org, c.course_id`,
    [org],
  );
  return byId(rows.map((r) => ({ id: r.course_id, name: r.name, passRate: r.pass_rate, categories: r.categories })));
}

export function simulatorFilters(state: SimulatorState): unknown[] {
  return byId(
    state.filters.map((f) => ({
      id: f.id.toLowerCase(),
      name: f.name,
      answers: f.answers.map((a) => `${a.id.toLowerCase()}=${a.answer}`).sort(),
    })),
  );
}

export async function warehouseFilters(pool: pg.Pool, org = 'default'): Promise<unknown[]> {
  const { rows } = await pool.query<{ filter_id: string; name: string; answers: string[] }>(
    `select f.filter_id, f.name,
            coalesce(array_agg(a.answer_id::text || '=' || a.answer order by a.answer_id::text || '=' || a.answer)
                     filter (where a.answer_id is not null and a.removed_at is null), '{}') as answers
       from training.reporting_filters f left join training.reporting_filter_answers a using (org, filter_id)
      where f.org = $1 and f.removed_at is null group by f.org, f.filter_id`,
    [org],
  );
  return byId(rows.map((r) => ({ id: r.filter_id, name: r.name, answers: r.answers })));
}

export function simulatorUsers(state: SimulatorState): unknown[] {
  return byId(
    state.users.map((u) => ({
      id: u.id.toLowerCase(),
      email: u.email,
      firstName: u.firstName,
      lastName: u.lastName,
      role: u.role,
      organisationIdentifier: u.organisationIdentifier,
      hasAccess: u.hasAccess,
    })),
  );
}

export async function warehouseUsers(pool: pg.Pool, org = 'default'): Promise<unknown[]> {
  const { rows } = await pool.query<{
    user_id: string; email: string; first_name: string | null; last_name: string | null; role: string | null; organisation_identifier: string | null; has_access: boolean;
  }>(`select user_id, email, first_name, last_name, role, organisation_identifier, has_access from training.users where org = $1 and removed_at is null`, [org]);
  return byId(
    rows.map((r) => ({
      id: r.user_id,
      email: r.email,
      firstName: r.first_name,
      lastName: r.last_name,
      role: r.role,
      organisationIdentifier: r.organisation_identifier,
      hasAccess: r.has_access,
    })),
  );
}
