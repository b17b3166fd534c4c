import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUserLocked, startSimulator, writeCallCount, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { feedDir, rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

let sim: RunningSimulator;
let noPlan: RunningSimulator;
let database: TestDatabase;
let files: ReturnType<typeof feedDir>;
const prefix = testPrefix();

const envFor = (s: RunningSimulator): Record<string, string> => ({
  TRAINSYNC_API_URL: s.url,
  TRAINSYNC_API_KEY: s.apiKey,
  DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
  REDIS_URL,
  TRAINSYNC_QUEUE_PREFIX: prefix,
  TRAINSYNC_REQUESTS_PER_SECOND: '500',
  TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
  LOG_LEVEL: 'warn',
});

beforeAll(async () => {
  const sizes = { users: 20, groups: 2, courses: 4, results: 5 };
  [sim, noPlan, database] = await Promise.all([
    startSimulator({ seed: 21, sizes }),
    startSimulator({ seed: 22, sizes, unlimitedPlan: false }),
    createTestDatabase(),
  ]);
  files = feedDir();
});
afterAll(async () => {
  await Promise.all([sim?.close(), noPlan?.close(), database?.drop(), dropPrefix(prefix)]);
  files?.cleanup();
});

describe('trainsync login-url', () => {
  it('prints the URL; USER_NOT_FOUND, USER_LOCKOUT and COURSE_NOT_FOUND exit 1 with the code', async () => {
    const [user, locked] = sim.state.users.filter((u) => u.hasAccess);
    setUserLocked(sim.state, locked!.email, true);
    const course = sim.state.courses[0]!.id;
    const env = envFor(sim);
    const [ok, notFound, lockout, noCourse] = await Promise.all([
      runCli(['login-url', user!.email, course], env),
      runCli(['login-url', 'nobody@nowhere.example', course], env),
      runCli(['login-url', locked!.email, course], env),
      runCli(['login-url', user!.email, '6f9619ff-8b86-d011-b42d-00c04fc964ff'], env),
    ]);
    expect(ok.code).toBe(0);
    const url = new URL(ok.stdout.trim());
    expect(url.pathname).toBe('/account/login');
    expect(url.searchParams.get('userId')).toBe(user!.id);
    expect(url.searchParams.get('moduleId')).toBe(course);
    for (const [run, code] of [[notFound, 'USER_NOT_FOUND'], [lockout, 'USER_LOCKOUT'], [noCourse, 'COURSE_NOT_FOUND']] as const) {
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
      expect(run.stderr).toContain(`trainsync: ${code}:`);
    }
  });
});

describe('trainsync seats', () => {
  it('prints seats in use and total, and "not applicable" without an unlimited plan', async () => {
    const [withPlan, without] = await Promise.all([runCli(['seats', '--json'], envFor(sim)), runCli(['seats'], envFor(noPlan))]);
    const inUse = sim.state.users.filter((u) => u.hasAccess).length;
    expect(withPlan.code).toBe(0);
    expect(JSON.parse(withPlan.stdout)).toEqual({ applicable: true, seatsInUse: inUse, totalSeats: sim.state.seats.totalSeats, free: sim.state.seats.totalSeats - inUse });
    expect(without).toMatchObject({ code: 0, stdout: expect.stringMatching(/^seats: not applicable \(NO_UNLIMITED_PLAN/) });
  });
});

describe('trainsync provision', () => {
  it('--dry-run prints the plan and changes nothing', async () => {
    const rows = rowsFromState(sim.state);
    const file = files.write('hr.csv', toCsv([...rows, { employee_id: 'NEW1', email: 'new.one@acme-training.example', first_name: 'New', last_name: 'One', status: 'active', groups: [], role: 'USER', organisation_identifier: 'NEW1' }]));
    sim.resetRequests();
    const run = await runCli(['provision', file, '--dry-run'], envFor(sim));
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/hr\.csv: 21 rows read, 0 rejected/);
    expect(run.stdout).toMatch(/first run: 20 of 20 existing accounts match feed rows/);
    expect(run.stdout).toMatch(/│ create-user\s+│ 1\s+│ new\.one@acme-training\.example/);
    expect(run.stdout).toContain('dry run: nothing was enqueued');
    expect(writeCallCount(sim.requests)).toBe(0);
    const { rows: identities } = await database.pool.query('select count(*)::int as n from trainsync.identities');
    expect(identities[0].n).toBe(0);
    const { rows: feeds } = await database.pool.query('select dry_run, actions from trainsync.feeds');
    expect(feeds).toEqual([{ dry_run: true, actions: 1 + rows.reduce((n, r) => n + r.groups.length, 0) }]);
  });

  it('a feed without the required columns is refused with exit status 2', async () => {
    const file = files.write('bad.csv', 'id,mail\nE1,a@example.com\n');
    const run = await runCli(['provision', file], envFor(sim));
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/feed error: .*employee_id/);
    expect(run.stderr).toMatch(/refused, nothing was enqueued/);
  });
});
