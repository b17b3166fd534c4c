import { owner } from './helpers/owner.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * `trainsync status --org all` with 1,000 organisations registered, run as a person runs it:
 * a summary (counts by state, the first 20 needing attention, how many more) instead of a
 * block each; `--json` with every organisation; `--offset/--limit` a page of them; exit 0.
 * The warehouse is read in a few set-based statements, not several per organisation:
 * Postgres' count of committed transactions on the test's database says how many.
 */

const N = 1_000;
const slug = (i: number): string => `o${String(i).padStart(4, '0')}`;
/** Organisations by what their runs say (1-based ranges of the orgs file's order). */
const FAILED = [101, 125] as const; // 25: last users run failed
const RUNNING = [201, 205] as const; // 5
const STALE = [301, 310] as const; // 10: last good run 3 days ago
const NEVER = [941, 1000] as const; // 60: no run
const WINDOWS = [11, 13] as const; // 3 ok ones with unfinished windows
const ATTENTION = 25 + 10 + 3;

let database: TestDatabase;
let prefix: string;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase();
  prefix = testPrefix();
  dir = mkdtempSync(path.join(tmpdir(), 'trainsync-status-many-'));
  const file = path.join(dir, 'orgs.json');
  writeFileSync(file, JSON.stringify({ organisations: Array.from({ length: N }, (_, i) => ({ slug: slug(i + 1), name: `Org ${i + 1}`, apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'ORG_KEY' } })) }));
  env = { TRAINSYNC_ORGS_FILE: file, ORG_KEY: 'key-not-used-here', DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn', COLUMNS: '120' };
  const config = loadConfig(env);
  // Only to migrate and seed: closed at once, so its idle sessions (the pool ends them after
  // 10 s) are not among those `commits()` waits for before its first count.
  const app = await createApp(config, createLogger('warn', new Writable({ write: (_c, _e, callback) => callback() })), { jobs: allJobs, migrate: true });
  try {
    await seed(owner(app).db);
  } finally {
    await app.close();
  }
}, 180_000);

/** The runs and windows the tests count, in a few set-based statements. */
async function seed(db: ReturnType<typeof owner>['db']): Promise<void> {
  const inRange = (range: readonly [number, number]): ReturnType<typeof sql> => sql`i between ${range[0]} and ${range[1]}`;
  // Every organisation but the never-run ones: a users run that succeeded an hour ago…
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted)
    select 'o' || lpad(i::text, 4, '0'), 'users', 'full', now() - interval '61 minutes', now() - interval '60 minutes', 'succeeded', 3
    from generate_series(1, ${NEVER[0] - 1}) as i where not (${inRange(STALE)})`.execute(db);
  // …or three days ago (stale),
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status)
    select 'o' || lpad(i::text, 4, '0'), 'users', 'full', now() - interval '3 days', now() - interval '3 days', 'succeeded'
    from generate_series(1, ${N}) as i where ${inRange(STALE)}`.execute(db);
  // then a failed one, or one still running.
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, error)
    select 'o' || lpad(i::text, 4, '0'), 'users', 'full', now() - interval '5 minutes', now() - interval '4 minutes', 'failed', 'UNAUTHORIZED: the key was refused'
    from generate_series(1, ${N}) as i where ${inRange(FAILED)}`.execute(db);
  await sql`insert into trainsync.runs (org, resource, mode, started_at, status)
    select 'o' || lpad(i::text, 4, '0'), 'users', 'full', now() - interval '1 minute', 'running'
    from generate_series(1, ${N}) as i where ${inRange(RUNNING)}`.execute(db);
  await sql`insert into trainsync.unfinished_windows (org, resource, window_key, reason)
    select 'o' || lpad(i::text, 4, '0'), 'results', '2024-01-01/2024-01-08', 'the test'
    from generate_series(1, ${N}) as i where ${inRange(WINDOWS)}`.execute(db);
}

afterAll(async () => {
  await database?.drop();
  if (prefix) await dropPrefix(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Transactions committed on the test's database so far, once every other session of it (a CLI child's) has ended. */
async function commits(): Promise<number> {
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    // A backend reports its counts as it exits: wait for the CLI's to be gone.
    await waitFor(async () => {
      const { rows } = await admin.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and application_name <> 'trainsync-test-owner'");
      return rows[0]!.n === 0 || undefined;
    }, 60_000, 'the CLI sessions to end');
    await admin.query('select pg_stat_clear_snapshot()');
    const { rows } = await admin.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = current_database()');
    return Number(rows[0]!.n);
  } finally {
    await admin.end();
  }
}

describe('status --org all with 1,000 organisations', () => {
  it('prints counts by state and the first 20 needing attention, in a few statements', async () => {
    const before = await commits();
    const run = await runCli(['status', '--org', 'all'], env);
    const spent = (await commits()) - before;
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toContain(`Organisations: ${N} (ok ${N - 25 - 5 - 10 - 60}, running 5, failed 25, stale 10, never run 60)`);
    expect(lines).toContain(`Needing attention: ${ATTENTION} (failed or stale runs, unfinished windows, provisioning actions, held plans)`);
    expect(lines.at(-1)).toBe(`and ${ATTENTION - 20} more: use --org <slug>, --offset/--limit, or --json`);
    // In the file's order: the three with windows, then the first failed ones.
    const named = lines.flatMap((line) => /^│ (o\d{4}) /.exec(line)?.[1] ?? []);
    expect(named).toEqual([...[11, 12, 13], ...Array.from({ length: 17 }, (_, k) => 101 + k)].map(slug));
    // Four minutes ago is HH:MM, or the day when the test straddles midnight UTC.
    expect(run.stdout).toMatch(/o0101 +│ failed +│ users failed \d{4}-\d\d-\d\d \d\d:\d\d UTC: UNAUTHORIZED: the key was refused/);
    expect(run.stdout).toMatch(/o0011 +│ ok +│ 1 unfinished window /);
    expect(lines.length).toBeLessThan(80);
    // Five pages of 200, one statement each, plus opening the app: nowhere near one per organisation.
    expect(spent).toBeLessThan(50);
  });

  it('--json gives every organisation, its state, its runs and the counts', async () => {
    const before = await commits();
    const run = await runCli(['status', '--org', 'all', '--json'], env);
    const spent = (await commits()) - before;
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      orgs: string[];
      organisations: Array<{ org: string; state: string; failed: string[]; stale: string[]; unfinishedWindows: number; attention: boolean }>;
      runs: Array<{ org: string; resource: string; status: string }>;
      sections: Array<{ org: string; title: string; rows: unknown[] }>;
      summary: Record<string, number>;
    };
    expect(report.orgs).toHaveLength(N);
    expect(report.organisations.map((o) => o.org)).toEqual(report.orgs);
    expect(report.summary).toEqual({ organisations: N, ok: N - 100, running: 5, failed: 25, stale: 10, 'never run': 60, attention: ATTENTION });
    expect(report.organisations.find((o) => o.org === slug(301))).toMatchObject({ state: 'stale', stale: ['users'], attention: true });
    expect(report.organisations.find((o) => o.org === slug(12))).toMatchObject({ state: 'ok', unfinishedWindows: 1, attention: true });
    expect(report.runs).toHaveLength(N - 60);
    expect(report.runs.find((r) => r.org === slug(201))).toMatchObject({ resource: 'users', status: 'running (queued to resume)' });
    // Five sections for every organisation (the fifth: SCIM Users quarantined).
    expect(report.sections).toHaveLength(5 * N);
    expect(report.sections.filter((s) => s.org === slug(13) && s.rows.length > 0).map((s) => s.title)).toEqual([expect.stringMatching(/^Unfinished windows/)]);
    expect(spent).toBeLessThan(100);
  });

  it('--offset and --limit report a page of the organisations', async () => {
    const text = await runCli(['status', '--org', 'all', '--offset', '980', '--limit', '30'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Organisations: 981–1000 of ${N} (ok 0, running 0, failed 0, stale 0, never run 20)`);
    const json = await runCli(['status', '--org', 'all', '--offset', '100', '--limit', '30', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { orgs: string[]; summary: Record<string, number> };
    expect(report.orgs).toEqual(Array.from({ length: 30 }, (_, k) => slug(101 + k)));
    expect(report.summary).toMatchObject({ organisations: 30, failed: 25, ok: 5 });
    const bad = await runCli(['status', '--org', 'all', '--limit', '0'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--limit.*at least 1/);
  });

  it('ten organisations or fewer (named with --org, or a page) still get a block each', async () => {
    const run = await runCli(['status', '--org', slug(101), '--org', slug(301)], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`== Organisation ${slug(101)} ==`);
    expect(run.stdout).toContain(`== Organisation ${slug(301)} ==`);
    expect(run.stdout).not.toContain('Organisations:');
    const page = await runCli(['status', '--org', 'all', '--offset', '995'], env);
    expect(page.stdout.match(/^== Organisation o\d{4} ==$/gm)).toEqual([996, 997, 998, 999, 1000].map((i) => `== Organisation ${slug(i)} ==`));
  });
});
