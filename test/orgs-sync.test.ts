import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { removeCourse, removeResult, updateCourse } from '../src/simulator/state.ts';
import { migrate, SQL_DIR } from '../src/warehouse/migrator.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { simulatorCourses, simulatorResults, simulatorUsers, warehouseCourses, warehouseResults, warehouseUsers } from './helpers/warehouse-compare.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SIZES = { results: 400, users: 60, courses: 12, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' };

/**
 * Two organisations through the CLI: two simulators with the SAME seed, so every course,
 * result and user GUID is listed by both keys, exactly the overlap the warehouse's keys
 * must survive.
 */
describe('sync of two organisations into one warehouse', () => {
  let north: RunningSimulator;
  let south: RunningSimulator;
  let database: TestDatabase;
  let prefix: string;
  let dir: string;
  let env: Record<string, string>;
  let sharedCourse: string;

  beforeAll(async () => {
    north = await startSimulator({ seed: 11, apiKey: 'north-key', sizes: SIZES });
    south = await startSimulator({ seed: 11, apiKey: 'south-key', sizes: SIZES });
    // One shared course with a pass rate of its own in each organisation.
    sharedCourse = north.state.courses[0]!.id;
    updateCourse(north.state, sharedCourse, { passRate: 40 });
    updateCourse(south.state, sharedCourse, { passRate: 95 });
    database = await createTestDatabase();
    prefix = testPrefix();
    dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-orgs-sync-'));
    const file = path.join(dir, 'orgs.json');
    await writeFile(
      file,
      JSON.stringify({
        organisations: [
          { slug: 'north', name: 'North', apiUrl: north.url, apiKey: { env: 'NORTH_KEY' }, requestsPerSecond: 2000 },
          { slug: 'south', name: 'South', apiUrl: south.url, apiKey: { env: 'SOUTH_KEY' }, requestsPerSecond: 2000 },
        ],
      }),
    );
    env = {
      TRAINSYNC_ORGS_FILE: file,
      NORTH_KEY: 'north-key',
      SOUTH_KEY: 'south-key',
      DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
      REDIS_URL,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
      LOG_LEVEL: 'warn',
    };
  });

  afterAll(async () => {
    await north?.close();
    await south?.close();
    await database?.drop();
    if (prefix) await dropPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Every row of the organisation's tables (and its runs), to prove another organisation's sync left them alone. */
  async function rowsOf(org: string): Promise<Record<string, unknown[]>> {
    const tables = {
      courses: 'select * from training.courses where org = $1 order by course_id',
      categories: 'select * from training.course_categories where org = $1 order by course_id, category_type, category_name',
      results: 'select * from training.results where org = $1 order by result_id',
      answers: 'select * from training.result_filter_answers where org = $1 order by result_id, answer_id',
      filters: 'select * from training.reporting_filters where org = $1 order by filter_id',
      filterAnswers: 'select * from training.reporting_filter_answers where org = $1 order by answer_id',
      users: 'select * from training.users where org = $1 order by user_id',
      groups: 'select * from training.groups where org = $1 order by group_id',
      groupCourses: 'select * from training.group_courses where org = $1 order by group_id, course_id',
      seats: 'select * from training.seat_usage where org = $1 order by observed_at',
      runs: 'select * from trainsync.runs where org = $1 order by id',
      watermarks: 'select * from trainsync.watermarks where org = $1 order by resource',
      checkpoints: 'select * from trainsync.checkpoints where org = $1 order by key',
      windows: 'select * from trainsync.unfinished_windows where org = $1 order by resource, window_key',
    };
    const out: Record<string, unknown[]> = {};
    for (const [name, text] of Object.entries(tables)) out[name] = (await database.pool.query(text, [org])).rows;
    return out;
  }

  it('refuses a sync that names no organisation, or an unknown one, naming the choices (exit 2)', async () => {
    const none = await runCli(['sync', 'courses'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('north');
    expect(none.stderr).toContain('south');
    const unknown = await runCli(['sync', 'courses', '--org', 'east'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/east/);
    expect(unknown.stderr).toMatch(/north, south/);
    expect((await database.pool.query('select count(*)::int as n from trainsync.runs')).rows[0].n).toBe(0);
  });

  it('syncs both organisations side by side, each row under its slug, a shared GUID once per organisation', async () => {
    const run = await runCli(['sync', '--org', 'all'], env);
    expect(run.stderr + run.stdout).not.toContain('FAILED');
    expect(run.code).toBe(0);
    // Several organisations: every summary row names its organisation.
    for (const org of ['north', 'south']) for (const resource of ['courses', 'results', 'users']) expect(run.stdout).toContain(`${org} ${resource}`);

    const pool = database.pool;
    for (const [org, sim] of [['north', north], ['south', south]] as const) {
      expect(await warehouseResults(pool, org)).toEqual(simulatorResults(sim.state));
      expect(await warehouseCourses(pool, org)).toEqual(simulatorCourses(sim.state));
      expect(await warehouseUsers(pool, org)).toEqual(simulatorUsers(sim.state));
    }
    // The same seed: every GUID exists once per organisation, never merged, never doubled.
    const perId = async (text: string): Promise<number[]> => [...new Set((await pool.query<{ n: number }>(text)).rows.map((r) => r.n))];
    expect(await perId('select count(*)::int as n from training.courses group by course_id')).toEqual([2]);
    expect(await perId('select count(*)::int as n from training.users group by user_id')).toEqual([2]);
    expect(await perId('select count(*)::int as n from training.results group by result_id')).toEqual([2]);
    expect(await perId('select count(*)::int as n from training.result_details group by result_id')).toEqual([2]);

    // The shared course: one completion row per organisation, each with its own pass rate
    // (and the passes that rate makes: 40 % passes at least as many as 95 %).
    const completion = await pool.query<{ org: string; pass_rate: number; learners: string; passed: string }>(
      'select org, pass_rate, learners, passed from training.course_completion where course_id = $1 order by org',
      [sharedCourse],
    );
    expect(completion.rows.map((r) => [r.org, r.pass_rate])).toEqual([
      ['north', 40],
      ['south', 95],
    ]);
    expect(Number(completion.rows[0]!.learners)).toBe(Number(completion.rows[1]!.learners));
    expect(Number(completion.rows[0]!.passed)).toBeGreaterThanOrEqual(Number(completion.rows[1]!.passed));
    const seats = await pool.query('select org from training.latest_seat_usage order by org');
    expect(seats.rows).toEqual([{ org: 'north' }, { org: 'south' }]);

    // Runs, watermarks: each organisation its own.
    const runs = await pool.query<{ org: string; n: number }>("select org, count(*)::int as n from trainsync.runs where status = 'succeeded' group by org order by org");
    expect(runs.rows.map((r) => r.org)).toEqual(['north', 'south']);
    expect(runs.rows[0]!.n).toBe(runs.rows[1]!.n);
    const marks = await pool.query('select org, resource from trainsync.watermarks order by org');
    expect(marks.rows).toEqual([
      { org: 'north', resource: 'results' },
      { org: 'south', resource: 'results' },
    ]);

    // status: a section per organisation, each run carrying its org.
    const status = await runCli(['status', '--json'], env);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { orgs: string[]; runs: Array<{ org: string; resource: string }> };
    expect(report.orgs).toEqual(['north', 'south']);
    expect(new Set(report.runs.map((r) => r.org))).toEqual(new Set(['north', 'south']));
    const one = JSON.parse((await runCli(['status', '--json', '--org', 'south'], env)).stdout) as { runs: Array<{ org: string }> };
    expect(new Set(one.runs.map((r) => r.org))).toEqual(new Set(['south']));
    const text = await runCli(['status'], env);
    expect(text.stdout).toContain('== Organisation north ==');
    expect(text.stdout).toContain('== Organisation south ==');
  });

  it('a sync of one organisation (--org north) touches none of the other\'s rows or runs', async () => {
    const southBefore = await rowsOf('south');
    const northRunsBefore = (await rowsOf('north')).runs!.length;
    // North loses a result and a course; the same GUIDs stay in south.
    const goneResult = north.state.results[0]!.id;
    const goneCourse = north.state.courses[1]!.id;
    removeResult(north.state, goneResult);
    removeCourse(north.state, goneCourse);

    const run = await runCli(['sync', '--org', 'north', 'courses', 'results', '--full'], env);
    expect(run.code).toBe(0);
    // One organisation: the summary as a single-organisation deployment prints it.
    expect(run.stdout).not.toContain('north ');

    const removed = await database.pool.query<{ org: string; gone: boolean }>(
      'select org, removed_at is not null as gone from training.results where result_id = $1 order by org',
      [goneResult],
    );
    expect(removed.rows).toEqual([
      { org: 'north', gone: true },
      { org: 'south', gone: false },
    ]);
    const course = await database.pool.query('select org, removed_at is not null as gone from training.courses where course_id = $1 order by org', [goneCourse]);
    expect(course.rows).toEqual([
      { org: 'north', gone: true },
      { org: 'south', gone: false },
    ]);
    expect(await rowsOf('south')).toEqual(southBefore);
    expect((await rowsOf('north')).runs!.length).toBe(northRunsBefore + 2);
    expect(await warehouseResults(database.pool, 'north')).toEqual(simulatorResults(north.state));
  });

  it('cancel works within the selected organisation and refuses a job id of another', async () => {
    const none = await runCli(['cancel', 'results'], env);
    expect(none.code).toBe(2);
    // A queued sync of north's courses (no worker runs here, so it stays queued).
    const app = await createApp(loadConfig(env), createLogger('silent'), { jobs: allJobs });
    try {
      const job = await app.queue.add('sync-courses', syncPayloadSchema.parse({ trigger: 'cli' }), { org: 'north', dedupeId: 'sync-courses' });
      const nothing = await runCli(['cancel', 'courses', '--org', 'south'], env);
      expect(nothing.code).toBe(2);
      expect(nothing.stderr).toContain('no sync of courses is queued or running');
      const other = await runCli(['cancel', job.id, '--org', 'south'], env);
      expect(other.code).toBe(2);
      expect(other.stderr).toContain('belongs to organisation north');
      expect(await app.queue.deduplicated(SYNC_QUEUE, 'sync-courses', 'north')).toMatchObject({ id: job.id });
      const cancelled = await runCli(['cancel', 'courses', '--org', 'north'], env);
      expect(cancelled.code).toBe(0);
      expect(cancelled.stdout).toContain(`cancelled job ${job.id}`);
      expect(await app.queue.deduplicated(SYNC_QUEUE, 'sync-courses', 'north')).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

/**
 * A warehouse made by the previous version (migrations up to 0014 and the views of then)
 * keeps every row when migrated to this one: all of them `default`'s.
 */
describe('migrating a single-organisation warehouse', () => {
  let database: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    database = await createTestDatabase({ migrated: false });
    dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-pre-orgs-'));
    await mkdir(path.join(dir, 'migrations'), { recursive: true });
    for (const name of await readdir(path.join(SQL_DIR, 'migrations'))) {
      if (name <= '0014_organisations.sql') await cp(path.join(SQL_DIR, 'migrations', name), path.join(dir, 'migrations', name));
    }
    await cp(path.join(HERE, 'fixtures', 'pre-orgs-views'), path.join(dir, 'views'), { recursive: true });
  });

  afterAll(async () => {
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps every row, as the default organisation\'s, and the views keep their names', async () => {
    const log = createLogger('silent');
    const old = await migrate(database.pool, log, { sqlDir: dir });
    expect(old.applied.at(-1)).toBe('0014_organisations.sql');
    const q = (text: string, values: unknown[] = []): Promise<unknown> => database.pool.query(text, values);
    const T = '2024-03-01T00:00:00Z';
    const course = '11111111-1111-4111-8111-111111111111';
    const user = '22222222-2222-4222-8222-222222222222';
    const result = '33333333-3333-4333-8333-333333333333';
    const filter = '44444444-4444-4444-8444-444444444444';
    const answer = '55555555-5555-4555-8555-555555555555';
    const group = '66666666-6666-4666-8666-666666666666';
    await q('insert into training.courses (course_id, name, pass_rate, first_seen_at, last_seen_at, updated_at) values ($1, $2, 50, $3, $3, $3)', [course, 'Fire', T]);
    await q("insert into training.course_categories (course_id, category_type, category_name) values ($1, 'topic', 'Safety')", [course]);
    await q(
      `insert into training.results (result_id, user_id, course_id, is_complete, date_completed, score, maximum_score, first_seen_at, last_seen_at, updated_at)
       values ($1, $2, $3, true, $4, 8, 10, $4, $4, $4)`,
      [result, user, course, T],
    );
    await q('insert into training.result_filter_answers (result_id, answer_id) values ($1, $2)', [result, answer]);
    await q('insert into training.reporting_filters (filter_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $3, $3)', [filter, 'Dept', T]);
    await q('insert into training.reporting_filter_answers (answer_id, filter_id, answer, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $4, $4, $4)', [answer, filter, 'Sales', T]);
    await q('insert into training.seat_usage (observed_at, seats_in_use, total_seats) values ($1, 5, 10)', [T]);
    await q("insert into training.users (user_id, email, has_access, first_seen_at, last_seen_at, updated_at) values ($1, 'a@example.com', true, $2, $2, $2)", [user, T]);
    await q('insert into training.groups (group_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, $3, $3)', [group, 'Starters', T]);
    await q("insert into training.group_courses (group_id, course_id, course_name) values ($1, $2, 'Fire')", [group, course]);
    await q("insert into training.group_members (group_id, user_id, employee_id, since) values ($1, $2, 'E1', $3)", [group, user, T]);
    const run = (await database.pool.query<{ id: number }>("insert into trainsync.runs (resource, mode, status) values ('results', 'full', 'succeeded') returning id")).rows[0]!.id;
    await q("insert into trainsync.checkpoints (key, value, run_id) values ('results:job:1:full', '{}', $1)", [run]);
    await q("insert into trainsync.watermarks (resource, value) values ('results', '2024-03-01')");
    await q("insert into trainsync.quarantine (run_id, resource, raw, message) values ($1, 'results', '{\"id\": 1}', 'bad')", [run]);
    await q('insert into trainsync.result_sightings (run_id, result_id) values ($1, $2)', [run, result]);
    await q("insert into trainsync.unfinished_windows (resource, window_key, reason, run_id) values ('results', '2024-01-01..2024-01-08', 'gap', $1)", [run]);

    const tables = [
      'training.courses', 'training.course_categories', 'training.results', 'training.result_filter_answers', 'training.reporting_filters',
      'training.reporting_filter_answers', 'training.seat_usage', 'training.users', 'training.groups', 'training.group_courses',
      'training.group_members', 'trainsync.runs', 'trainsync.checkpoints', 'trainsync.watermarks', 'trainsync.quarantine',
      'trainsync.result_sightings', 'trainsync.unfinished_windows',
    ];
    const head = await migrate(database.pool, log);
    expect(head.applied).toContain('0015_org_sync.sql');
    for (const table of tables) {
      const { rows } = await database.pool.query<{ n: number; orgs: string[] }>(`select count(*)::int as n, array_agg(distinct org) as orgs from ${table}`);
      expect(rows[0], table).toEqual({ n: 1, orgs: ['default'] });
    }
    // The views keep their names and read the migrated rows, now with their organisation.
    const details = await database.pool.query('select result_id, course_name, passed, org from training.result_details');
    expect(details.rows).toEqual([{ result_id: result, course_name: 'Fire', passed: true, org: 'default' }]);
    const completion = await database.pool.query('select course_id, learners, org from training.course_completion');
    expect(completion.rows).toEqual([{ course_id: course, learners: 1, org: 'default' }]);
    const filters = await database.pool.query('select answer, org from training.result_filter_details');
    expect(filters.rows).toEqual([{ answer: 'Sales', org: 'default' }]);
    const seats = await database.pool.query('select seats_in_use, org from training.latest_seat_usage');
    expect(seats.rows).toEqual([{ seats_in_use: 5, org: 'default' }]);
    // No write can forget its organisation any more.
    await expect(q("insert into trainsync.watermarks (resource, value) values ('courses', 'x')")).rejects.toThrow(/org/);
  });
});
