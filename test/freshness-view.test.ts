import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { longestGapSeconds } from '../src/queue/schedule-interval.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runStreak } from '../src/sync/run-streak.ts';
import { recordSyncSchedules } from '../src/sync/sync-schedules.ts';
import { createTestDatabase, databaseUrl, withAdmin, type TestDatabase, asLogin as asLoginTo } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * training.freshness: per organisation and synced resource, the last complete run, its age and
 * the schedule, as the worker records it. Read by a per-organisation reader (its own rows only)
 * and by trainsync_reader (both organisations).
 */
const tag = randomBytes(3).toString('hex');
const readerOf = (org: string): string => `r${tag}_${org}`;
const northLogin = `bi${tag}_north`;
const allLogin = `bi${tag}_all`;
const sink = new Writable({ write: (_c, _e, callback) => callback() });
const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-freshness-'));
let t: TestDatabase;
let app: App;
let prefix: string;

const asLogin = <T>(login: string, fn: (client: pg.Client, notices: string[]) => Promise<T>): Promise<T> => asLoginTo(t.name, login, fn);

interface FreshnessRow {
  org: string;
  resource: string;
  last_complete_at: Date | null;
  age_seconds: number | null;
  schedule: string | null;
  interval_seconds: number | null;
}

const FRESHNESS = `select org, resource, last_complete_at, extract(epoch from age)::float8 as age_seconds, schedule,
  extract(epoch from schedule_interval)::float8 as interval_seconds from training.freshness order by org, resource`;

/** A finished run, as the sync engine leaves one. */
async function run(org: string, resource: string, status: string, finishedHoursAgo: number): Promise<void> {
  await t.pool.query(
    `insert into trainsync.runs (org, resource, status, started_at, finished_at)
     values ($1, $2, $3, now() - make_interval(hours => $4) - interval '5 minutes', now() - make_interval(hours => $4))`,
    [org, resource, status, finishedHoursAgo],
  );
}

beforeAll(async () => {
  t = await createTestDatabase();
  prefix = testPrefix();
  const file = path.join(dir, 'orgs.json');
  writeFileSync(
    file,
    JSON.stringify({
      organisations: [
        { slug: 'north', name: 'North', apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'KEY' }, reader: readerOf('north') },
        { slug: 'south', name: 'South', apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'KEY' }, reader: readerOf('south'), cron: { RESULTS: '0 6 * * 1-5' } },
      ],
    }),
  );
  const config = loadConfig({ TRAINSYNC_ORGS_FILE: file, KEY: 'k', DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: prefix, TRAINSYNC_SCHEDULE_SPREAD: '0' });
  app = await createApp(config, createLogger('warn', sink), { jobs: allJobs, migrate: true });
  await recordSyncSchedules(app.scopes, app.catalog, config);
  await withAdmin(async (admin) => {
    await admin.query(`create role ${admin.escapeIdentifier(northLogin)} login in role ${admin.escapeIdentifier(readerOf('north'))}`);
    await admin.query(`create role ${admin.escapeIdentifier(allLogin)} login in role trainsync_reader`);
  });
  // North's courses: complete 30 h ago, then a failed and an incomplete run (neither counts).
  await run('north', 'courses', 'succeeded', 30);
  await run('north', 'courses', 'failed', 6);
  await run('north', 'courses', 'incomplete', 2);
  // North's results never completed; a resource no worker schedules any more has runs of before.
  await run('north', 'results', 'failed', 1);
  await run('north', 'retired-listing', 'succeeded', 3);
  await run('south', 'courses', 'succeeded', 1);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await t?.drop();
  if (prefix) await dropPrefix(prefix);
  await withAdmin(async (admin) => {
    for (const role of [northLogin, allLogin, readerOf('north'), readerOf('south')]) await admin.query(`drop role if exists ${admin.escapeIdentifier(role)}`);
  });
  rmSync(dir, { recursive: true, force: true });
});

describe('training.freshness', () => {
  it("shows a per-organisation reader its own resources only: the last complete run, its age, the schedule the worker registered", async () => {
    const rows = await asLogin(northLogin, async (client) => (await client.query<FreshnessRow>(FRESHNESS)).rows);
    expect(new Set(rows.map((r) => r.org))).toEqual(new Set(['north']));
    const byResource = new Map(rows.map((r) => [r.resource, r]));
    // Every scheduled resource, and the one with runs but no schedule.
    expect([...byResource.keys()].sort()).toEqual(['courses', 'filters', 'groups', 'results', 'retired-listing', 'seats', 'users']);
    const courses = byResource.get('courses')!;
    expect(courses.schedule).toBe('0 2 * * *');
    expect(courses.interval_seconds).toBe(86_400);
    // The succeeded run, not the later failed and incomplete ones.
    expect(courses.age_seconds).toBeGreaterThan(30 * 3600 - 60);
    expect(courses.age_seconds).toBeLessThan(31 * 3600);
    const { rows: newest } = await t.pool.query<{ finished_at: Date }>("select finished_at from trainsync.runs where org = 'north' and resource = 'courses' and status = 'succeeded'");
    expect(courses.last_complete_at).toEqual(newest[0]!.finished_at);
    // Never complete: no time, no age; its schedule all the same.
    expect(byResource.get('results')).toMatchObject({ last_complete_at: null, age_seconds: null, schedule: '0 2 * * *', interval_seconds: 86_400 });
    // Runs, no schedule.
    expect(byResource.get('retired-listing')).toMatchObject({ schedule: null, interval_seconds: null });
    expect(byResource.get('retired-listing')!.age_seconds).toBeGreaterThan(3 * 3600 - 60);
    // Scheduled, never run.
    expect(byResource.get('users')).toMatchObject({ last_complete_at: null, schedule: '0 2 * * *' });
  });

  it('shows trainsync_reader every organisation, each with its own schedule (a weekday line waits out the weekend)', async () => {
    const rows = await asLogin(allLogin, async (client) => (await client.query<FreshnessRow>(FRESHNESS)).rows);
    expect(new Set(rows.map((r) => r.org))).toEqual(new Set(['north', 'south']));
    expect(rows.find((r) => r.org === 'south' && r.resource === 'results')).toMatchObject({ schedule: '0 6 * * 1-5', interval_seconds: 3 * 86_400 });
    expect(rows.find((r) => r.org === 'south' && r.resource === 'seats')).toMatchObject({ schedule: '0 * * * *', interval_seconds: 3600 });
    expect(rows.find((r) => r.org === 'south' && r.resource === 'courses')!.age_seconds).toBeLessThan(2 * 3600);
  });
});

describe('the schedule interval and the run streak', () => {
  it('is the longest gap between two fires of the cron line', () => {
    expect(longestGapSeconds('0 2 * * *')).toBe(86_400);
    expect(longestGapSeconds('0 * * * *')).toBe(3_600);
    expect(longestGapSeconds('*/15 * * * *')).toBe(900);
    expect(longestGapSeconds('30 6 * * 1-5')).toBe(3 * 86_400);
    expect(longestGapSeconds('0 2 31 * *')).toBe(61 * 86_400);
    // Fires once in the horizon: no bound.
    expect(longestGapSeconds('0 0 1 1 *')).toBeNull();
  });

  it('counts a failure and the incomplete runs in a row, newest first', () => {
    expect(runStreak([])).toEqual({ lastFailed: false, incompleteInARow: 0 });
    expect(runStreak(['failed', 'succeeded'])).toEqual({ lastFailed: true, incompleteInARow: 0 });
    expect(runStreak(['incomplete', 'incomplete', 'failed', 'incomplete'])).toEqual({ lastFailed: false, incompleteInARow: 2 });
    expect(runStreak(['incomplete', 'succeeded', 'incomplete'])).toEqual({ lastFailed: false, incompleteInARow: 1 });
    expect(runStreak(['incomplete', 'incomplete', 'incomplete'])).toEqual({ lastFailed: false, incompleteInARow: 3 });
  });
});
