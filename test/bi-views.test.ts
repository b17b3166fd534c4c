import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * training.assignment_status on a scenario built by hand with SQL (employees, users,
 * groups, their courses, memberships and results), so every status and every rule of
 * the view (latest completion, removed rows, several groups, no account) is pinned.
 */

let t: TestDatabase;

const id = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
// Users, groups, courses and results get distinct id ranges.
const U = (n: number): string => id(100 + n);
const G = (n: number): string => id(200 + n);
const C = (n: number): string => id(300 + n);
const R = (n: number): string => id(400 + n);

const T0 = '2024-01-01T00:00:00Z';

async function q(text: string, values: unknown[] = []): Promise<void> {
  await t.pool.query(text, values);
}

async function employee(employeeId: string, email: string, userId: string | null, options: { status?: string; removed?: boolean; attributes?: object } = {}): Promise<void> {
  await q(
    `insert into training.employees (org, employee_id, email, first_name, last_name, status, attributes, user_id, first_seen_at, last_seen_at, removed_at, updated_at)
     values ('default', $1, $2, 'First', 'Last', $3, $4::jsonb, $5, $6, $6, $7, $6)`,
    [employeeId, email, options.status ?? 'active', JSON.stringify(options.attributes ?? {}), userId, T0, options.removed ? '2024-06-01T00:00:00Z' : null],
  );
}

async function group(groupId: string, name: string, courses: Array<[string, string]>, removed = false): Promise<void> {
  await q(`insert into training.groups (org, group_id, name, first_seen_at, last_seen_at, updated_at, removed_at) values ('default', $1, $2, $3, $3, $3, $4)`, [groupId, name, T0, removed ? T0 : null]);
  for (const [courseId, courseName] of courses) await q('insert into training.group_courses (org, group_id, course_id, course_name) values (\'default\', $1, $2, $3)', [groupId, courseId, courseName]);
}

async function member(groupId: string, userId: string, employeeId: string, since: string, removed = false): Promise<void> {
  await q('insert into training.group_members (org, group_id, user_id, employee_id, since, removed_at) values (\'default\', $1, $2, $3, $4, $5)', [groupId, userId, employeeId, since, removed ? '2024-05-01T00:00:00Z' : null]);
}

async function course(courseId: string, name: string, passRate: number | null): Promise<void> {
  await q('insert into training.courses (org, course_id, name, pass_rate, first_seen_at, last_seen_at, updated_at) values (\'default\', $1, $2, $3, $4, $4, $4)', [courseId, name, passRate, T0]);
}

async function result(resultId: string, userId: string, courseId: string, r: { complete: boolean; at?: string; score?: number; max?: number; passRate?: number | null; removed?: boolean }): Promise<void> {
  await q(
    `insert into training.results (org, result_id, user_id, course_id, is_complete, date_completed, score, maximum_score, pass_rate, course_type, first_seen_at, last_seen_at, updated_at, removed_at)
     values ('default', $1, $2, $3, $4, $5, $6, $7, $8, 'SINGLE_COURSE', $9, $9, $9, $10)`,
    [resultId, userId, courseId, r.complete, r.at ?? null, r.score ?? null, r.max ?? null, r.passRate ?? null, T0, r.removed ? T0 : null],
  );
}

beforeAll(async () => {
  t = await createTestDatabase();
  await course(C(1), 'Fire Safety', 70);
  await course(C(2), 'Welcome Tour', null); // no pass rate: a completion is "completed"
  await course(C(3), 'Data Protection', 80);
  // C(4) is not in training.courses: its name comes from the group listing.

  await group(G(1), 'Sales', [[C(1), 'Fire Safety'], [C(2), 'Welcome Tour']]);
  await group(G(2), 'Managers', [[C(1), 'Fire Safety'], [C(3), 'Data Protection']]);
  await group(G(3), 'Old group', [[C(3), 'Data Protection']], true);
  await group(G(4), 'Drivers', [[C(4), 'Forklift Basics']]);

  // E1: in Sales and Managers (Fire Safety through both).
  await employee('E1', 'e1@example.com', U(1), { attributes: { department: 'Sales', manager: 'M. Boss' } });
  await member(G(1), U(1), 'E1', '2024-03-01T00:00:00Z');
  await member(G(2), U(1), 'E1', '2024-02-01T00:00:00Z');
  // Fire Safety: passed once, then failed a retake: the latest completion counts.
  await result(R(1), U(1), C(1), { complete: true, at: '2024-03-10T09:00:00Z', score: 90, max: 100 });
  await result(R(2), U(1), C(1), { complete: true, at: '2024-04-10T09:00:00Z', score: 50, max: 100 });
  await result(R(3), U(1), C(2), { complete: true, at: '2024-03-05T09:00:00Z', score: 0, max: 0 });
  await result(R(4), U(1), C(3), { complete: false });

  // E2: in Sales. Fire Safety passed on the result's own pass rate; Welcome Tour only a removed result.
  await employee('E2', 'e2@example.com', U(2), { attributes: { department: 'HR' } });
  await member(G(1), U(2), 'E2', '2024-03-02T00:00:00Z');
  await result(R(5), U(2), C(1), { complete: true, at: '2024-03-20T09:00:00Z', score: 7, max: 10, passRate: 70 });
  await result(R(6), U(2), C(2), { complete: true, at: '2024-03-21T09:00:00Z', removed: true });
  // Someone else's result for E2's course changes nothing.
  await result(R(7), U(9), C(2), { complete: true, at: '2024-03-21T09:00:00Z' });

  // E3: removed from HR: no rows. E4: no account: no rows.
  await employee('E3', 'e3@example.com', U(3), { removed: true });
  await member(G(1), U(3), 'E3', '2024-03-01T00:00:00Z');
  await employee('E4', 'e4@example.com', null);

  // E5: left Sales (membership removed), member of a removed group, and of Drivers.
  await employee('E5', 'e5@example.com', U(5), { status: 'inactive' });
  await member(G(1), U(5), 'E5', '2024-01-15T00:00:00Z', true);
  await member(G(3), U(5), 'E5', '2024-01-15T00:00:00Z');
  await member(G(4), U(5), 'E5', '2024-04-01T00:00:00Z');
});

afterAll(async () => {
  await t?.drop();
});

interface Row {
  employee_id: string;
  course_id: string;
  course_name: string;
  status: string;
  assigned_since: string;
  completed_at: string | null;
  score: number | null;
  result_id: string | null;
  employee_status: string;
}

describe('training.assignment_status', () => {
  it('gives one row per employee with an account and assigned course, in every status', async () => {
    const { rows } = await t.pool.query<Row>(
      `select employee_id, course_id::text, course_name, status, employee_status,
              to_char(assigned_since at time zone 'UTC', 'YYYY-MM-DD') as assigned_since,
              to_char(completed_at at time zone 'UTC', 'YYYY-MM-DD') as completed_at, score, result_id::text
         from training.assignment_status order by employee_id, course_name`,
    );
    expect(rows).toEqual([
      { employee_id: 'E1', course_id: C(3), course_name: 'Data Protection', status: 'in_progress', employee_status: 'active', assigned_since: '2024-02-01', completed_at: null, score: null, result_id: R(4) },
      { employee_id: 'E1', course_id: C(1), course_name: 'Fire Safety', status: 'failed', employee_status: 'active', assigned_since: '2024-02-01', completed_at: '2024-04-10', score: 50, result_id: R(2) },
      { employee_id: 'E1', course_id: C(2), course_name: 'Welcome Tour', status: 'completed', employee_status: 'active', assigned_since: '2024-03-01', completed_at: '2024-03-05', score: 0, result_id: R(3) },
      { employee_id: 'E2', course_id: C(1), course_name: 'Fire Safety', status: 'passed', employee_status: 'active', assigned_since: '2024-03-02', completed_at: '2024-03-20', score: 7, result_id: R(5) },
      { employee_id: 'E2', course_id: C(2), course_name: 'Welcome Tour', status: 'not_started', employee_status: 'active', assigned_since: '2024-03-02', completed_at: null, score: null, result_id: null },
      { employee_id: 'E5', course_id: C(4), course_name: 'Forklift Basics', status: 'not_started', employee_status: 'inactive', assigned_since: '2024-04-01', completed_at: null, score: null, result_id: null },
    ]);
  });

  it('carries the HR attributes for slicing by department', async () => {
    const { rows } = await t.pool.query<{ department: string; open: number }>(
      `select attributes->>'department' as department, count(*) filter (where status not in ('passed', 'completed'))::int as open
         from training.assignment_status group by 1 order by 1 nulls last`,
    );
    expect(rows).toEqual([
      { department: 'HR', open: 1 },
      { department: 'Sales', open: 2 },
      { department: null, open: 1 },
    ]);
  });

  it('follows new results: a later pass turns failed into passed', async () => {
    await result(R(8), U(1), C(1), { complete: true, at: '2024-05-01T09:00:00Z', score: 95, max: 100 });
    const { rows } = await t.pool.query('select status, result_id::text from training.assignment_status where employee_id = $1 and course_id = $2', ['E1', C(1)]);
    expect(rows).toEqual([{ status: 'passed', result_id: R(8) }]);
  });
});

describe('the BI role', () => {
  it('trainsync_reader can select both views and the group tables, but nothing in trainsync', async () => {
    const RECON = 'select kind, count(*)::int as n from training.hr_reconciliation group by kind order by kind';
    const GROUP_TABLES = ['training.groups', 'training.group_courses', 'training.group_members'];
    // What the owner sees; the reader must see the same rows.
    const ownerRecon = (await t.pool.query(RECON)).rows;
    const ownerTables = await Promise.all(GROUP_TABLES.map(async (table) => (await t.pool.query(`select * from ${table} order by 1, 2`)).rows));
    const client = await t.pool.connect();
    try {
      await client.query('begin');
      await client.query('set local role trainsync_reader');
      const status = await client.query('select count(*)::int as n from training.assignment_status');
      expect(status.rows[0]?.n).toBe(6);
      const recon = await client.query(RECON);
      expect(recon.rows.length).toBeGreaterThan(0);
      expect(recon.rows).toEqual(ownerRecon);
      for (const [i, table] of GROUP_TABLES.entries()) {
        const { rows } = await client.query(`select * from ${table} order by 1, 2`);
        expect(rows.length, table).toBeGreaterThan(0);
        expect(rows, table).toEqual(ownerTables[i]);
      }
      // The fixture's four groups (one removed) and their six course links, read as the reader.
      const groups = await client.query<{ name: string; removed: boolean }>('select name, removed_at is not null as removed from training.groups order by name');
      expect(groups.rows).toEqual([
        { name: 'Drivers', removed: false },
        { name: 'Managers', removed: false },
        { name: 'Old group', removed: true },
        { name: 'Sales', removed: false },
      ]);
      expect(ownerTables[1]).toHaveLength(6);
      await client.query('savepoint denied');
      // Nothing of schema trainsync: hr_reconciliation reads the actions and identities with
      // its owner's rights (a security barrier that filters itself, sql/views/70).
      await expect(client.query('select before, after from trainsync.provisioning_actions')).rejects.toThrow(/permission denied/);
      await client.query('rollback to savepoint denied');
      await expect(client.query('select count(*) from trainsync.held_plans')).rejects.toThrow(/permission denied/);
      await client.query('rollback to savepoint denied');
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
  });
});
