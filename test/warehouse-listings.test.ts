import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { courseSchema, filterSchema, resultSchema, userSchema, type Course } from '../src/platform/schemas.ts';
import {
  insertSeatUsage,
  markMissingCourses,
  markMissingFilters,
  markMissingUsers,
  upsertCourses,
  upsertFilters,
  upsertResults,
  upsertUsers,
} from './helpers/resource-loaders.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});

afterAll(async () => {
  await t.drop();
});

const day = (n: number): Date => new Date(Date.UTC(2024, 0, n));

function course(overrides: Record<string, unknown> = {}): Course {
  return courseSchema.parse({ id: randomUUID(), name: 'Fire safety', passRate: 80, categories: [], ...overrides });
}

async function categoriesOf(courseId: string): Promise<string[]> {
  const { rows } = await t.pool.query(
    'select category_type, category_name from training.course_categories where course_id = $1 order by 1, 2',
    [courseId],
  );
  return rows.map((r) => `${r.category_type}:${r.category_name}`);
}

describe('courses', () => {
  it('counts changes by data (not last_seen_at), replaces categories, marks and revives missing courses', async () => {
    const a = course({ categories: [{ type: 'topic', name: 'safety' }] });
    const b = course({ name: 'GDPR', passRate: null });
    const load = (courses: Course[], at: Date) => t.scope().transaction((c) => upsertCourses(c, courses, at));

    expect(await load([a, b], day(1))).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await load([a, b], day(2))).toEqual({ inserted: 0, updated: 0, unchanged: 2 });
    const seen = await t.pool.query('select last_seen_at, updated_at from training.courses where course_id = $1', [a.id]);
    expect(seen.rows[0].last_seen_at.toISOString()).toBe(day(2).toISOString());
    expect(seen.rows[0].updated_at.toISOString()).toBe(day(1).toISOString());

    // Only the categories change: updated, and the set is replaced.
    const a2 = courseSchema.parse({ ...a, categories: [{ type: 'topic', name: 'fire' }, { type: 'level', name: 'basic' }] });
    expect(await load([a2, b], day(3))).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
    expect(await categoriesOf(a.id)).toEqual(['level:basic', 'topic:fire']);

    // b is not listed on day 4: marked removed; the view drops it.
    expect(await load([a2], day(4))).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    expect(await t.scope().transaction((c) => markMissingCourses(c, day(4)))).toBe(1);
    const removed = await t.pool.query('select removed_at from training.courses where course_id = $1', [b.id]);
    expect(removed.rows[0].removed_at.toISOString()).toBe(day(4).toISOString());
    const listed = await t.db.selectFrom('training.course_completion').select('course_id').execute();
    expect(listed.map((r) => r.course_id)).toContain(a.id);
    expect(listed.map((r) => r.course_id)).not.toContain(b.id);
    // Marking again changes nothing.
    expect(await t.scope().transaction((c) => markMissingCourses(c, day(4)))).toBe(0);

    // Listed again: revived, counted as updated.
    expect(await load([a2, b], day(5))).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
    const back = await t.pool.query('select removed_at from training.courses where course_id = $1', [b.id]);
    expect(back.rows[0].removed_at).toBeNull();
  });
});

describe('filters and users', () => {
  it('writes filters with answers; an answer change updates its filter; missing ones are marked', async () => {
    const dept = { id: randomUUID(), name: 'Department', answers: [{ id: randomUUID(), answer: 'Sales' }, { id: randomUUID(), answer: 'IT' }] };
    const site = { id: randomUUID(), name: 'Site', answers: [{ id: randomUUID(), answer: 'Leeds' }] };
    const load = (filters: unknown[], at: Date) =>
      t.scope().transaction((c) => upsertFilters(c, filters.map((f) => filterSchema.parse(f)), at));

    expect(await load([dept, site], day(1))).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await load([dept, site], day(2))).toEqual({ inserted: 0, updated: 0, unchanged: 2 });
    const renamed = { ...dept, answers: [{ ...dept.answers[0]!, answer: 'Sales & Marketing' }, dept.answers[1]!] };
    expect(await load([renamed, site], day(3))).toEqual({ inserted: 0, updated: 1, unchanged: 1 });

    // Site and the IT answer vanish.
    const fewer = { ...renamed, answers: [renamed.answers[0]!] };
    await load([fewer], day(4));
    expect(await t.scope().transaction((c) => markMissingFilters(c, day(4)))).toBe(3); // site, Leeds, IT
    const { rows } = await t.pool.query(
      'select answer, removed_at is not null as removed from training.reporting_filter_answers order by answer',
    );
    expect(rows).toEqual([
      { answer: 'IT', removed: true },
      { answer: 'Leeds', removed: true },
      { answer: 'Sales & Marketing', removed: false },
    ]);
  });

  it('writes users, counts unchanged ones, marks missing ones', async () => {
    const raw = (email: string) => ({
      id: randomUUID(),
      email,
      firstName: 'Ann',
      lastName: 'Lee',
      role: 'USER',
      organisationIdentifier: 'E1',
      hasAccess: true,
      usingSeat: false,
    });
    const [u1, u2] = [raw('ann@example.com'), raw('bob@example.com')];
    const load = (users: unknown[], at: Date) =>
      t.scope().transaction((c) => upsertUsers(c, users.map((u) => userSchema.parse(u)), at));
    expect(await load([u1, u2], day(1))).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await load([u1, { ...u2, hasAccess: false }], day(2))).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
    expect(await load([u1], day(3))).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    expect(await t.scope().transaction((c) => markMissingUsers(c, day(3)))).toBe(1);
    const users = await t.db.selectFrom('training.users').select(['email', 'has_access', 'removed_at']).orderBy('email').execute();
    expect(users.map((u) => [u.email, u.has_access, u.removed_at !== null])).toEqual([
      ['ann@example.com', true, false],
      ['bob@example.com', false, true],
    ]);
  });
});

describe('views', () => {
  it('result_details, course_completion, result_filter_details and latest_seat_usage give the expected figures', async () => {
    const c80 = course({ name: 'Pass at 80', passRate: 80 });
    const cNone = course({ name: 'No pass rate', passRate: null });
    await t.scope().transaction((c) => upsertCourses(c, [c80, cNone], day(1)));
    const dept = filterSchema.parse({ id: randomUUID(), name: 'Department', answers: [{ id: randomUUID(), answer: 'Sales' }] });
    await t.scope().transaction((c) => upsertFilters(c, [dept], day(1)));
    const sales = dept.answers[0]!.id;

    const [u1, u2, u3] = [randomUUID(), randomUUID(), randomUUID()];
    const r = (fields: Record<string, unknown>) =>
      resultSchema.parse({ id: randomUUID(), isComplete: true, dateCompleted: '2024-01-02T10:00:00Z', ...fields });
    const rows = {
      exact: r({ userId: u1, courseId: c80.id, score: 8, maximumScore: 10 }), // 80% >= 80: passed
      below: r({ userId: u2, courseId: c80.id, score: 79, maximumScore: 100 }), // failed
      ownRate: r({ userId: u3, courseId: c80.id, score: 5, maximumScore: 10, passRate: 50 }), // own rate 50: passed
      incomplete: r({ userId: u3, courseId: c80.id, isComplete: false, dateCompleted: null, score: null, maximumScore: 10 }),
      noRate: r({ userId: u1, courseId: cNone.id, score: 10, maximumScore: 10, resultFilters: [sales] }), // null
      noQuestions: r({ userId: u2, courseId: c80.id, score: 0, maximumScore: 0 }), // null
    };
    await t.scope().transaction((c) => upsertResults(c, Object.values(rows), { seenAt: day(2) }));

    const details = await t.db.selectFrom('training.result_details').select(['result_id', 'passed', 'course_name']).execute();
    const passed = new Map(details.map((d) => [d.result_id, d.passed]));
    expect(passed.get(rows.exact.id)).toBe(true);
    expect(passed.get(rows.below.id)).toBe(false);
    expect(passed.get(rows.ownRate.id)).toBe(true);
    expect(passed.get(rows.incomplete.id)).toBeNull();
    expect(passed.get(rows.noRate.id)).toBeNull();
    expect(passed.get(rows.noQuestions.id)).toBeNull();
    expect(details.find((d) => d.result_id === rows.noRate.id)?.course_name).toBe('No pass rate');

    const completion = await t.db
      .selectFrom('training.course_completion')
      .select(['course_id', 'learners', 'completed', 'passed', 'completion_rate'])
      .where('course_id', 'in', [c80.id, cNone.id])
      .execute();
    const byCourse = new Map(completion.map((c) => [c.course_id, c]));
    // c80: learners u1, u2, u3; completed u1, u2 (below and noQuestions), u3 (ownRate); passed u1, u3.
    expect(byCourse.get(c80.id)).toMatchObject({ learners: 3, completed: 3, passed: 2, completion_rate: '1.0000' });
    expect(byCourse.get(cNone.id)).toMatchObject({ learners: 1, completed: 1, passed: 0, completion_rate: '1.0000' });

    const filterRows = await t.db.selectFrom('training.result_filter_details').selectAll().execute();
    expect(filterRows).toEqual([
      {
        result_id: rows.noRate.id,
        user_id: u1,
        course_id: cNone.id,
        filter_id: dept.id,
        filter_name: 'Department',
        answer_id: sales,
        answer: 'Sales',
        org: 'default',
      },
    ]);

    await t.scope().transaction((tx) => insertSeatUsage(tx, { observedAt: day(1), seatsInUse: 10, totalSeats: 50, applicable: true }));
    await t.scope().transaction((tx) => insertSeatUsage(tx, { observedAt: day(2), seatsInUse: null, totalSeats: null, applicable: false }));
    const latest = await t.db.selectFrom('training.latest_seat_usage').selectAll().execute();
    expect(latest).toEqual([{ observed_at: day(2), seats_in_use: null, total_seats: null, applicable: false, org: 'default' }]);
  });

  it('completion_rate counts distinct learners', async () => {
    const c = course({ name: 'Half done', passRate: 50 });
    await t.scope().transaction((client) => upsertCourses(client, [c], day(1)));
    const [u1, u2] = [randomUUID(), randomUUID()];
    const r = (userId: string, isComplete: boolean) =>
      resultSchema.parse({ id: randomUUID(), userId, courseId: c.id, isComplete, score: 1, maximumScore: 2 });
    await t.scope().transaction((client) => upsertResults(client, [r(u1, true), r(u1, true), r(u2, false)], { seenAt: day(2) }));
    const row = await t.db.selectFrom('training.course_completion').selectAll().where('course_id', '=', c.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ learners: 2, completed: 1, passed: 1, completion_rate: '0.5000' });
  });
});
