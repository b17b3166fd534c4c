import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../src/queue/names.ts';
import { SQL_DIR } from '../src/warehouse/migrator.ts';
import { runCli } from './helpers/cli.ts';
import { databaseUrl, withAdmin } from './helpers/db.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';

/** `trainsync migrate` and a successful `trainsync status`, run as a person runs them (child processes). */

describe('trainsync migrate', () => {
  // Named like createTestDatabase's, so a crashed run's leftover is dropped by the next setup.
  const name = `trainsync_test_${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString('hex')}`;
  afterAll(async () => {
    await withAdmin((admin) => admin.query(`drop database if exists ${admin.escapeIdentifier(name)} with (force)`));
  });

  it('creates the missing database, applies every migration and view, and applies nothing the second time', async () => {
    const migrations = readdirSync(`${SQL_DIR}/migrations`).filter((f) => f.endsWith('.sql')).sort();
    const views = readdirSync(`${SQL_DIR}/views`).filter((f) => f.endsWith('.sql'));
    expect(migrations.length).toBeGreaterThan(0);
    const env = { DATABASE_URL: databaseUrl(name), LOG_LEVEL: 'warn' };

    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim().split('\n')).toEqual([...migrations.map((file) => `applied ${file}`), `views: ${views.length} applied`]);

    const client = new pg.Client({ connectionString: databaseUrl(name) });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('select count(*)::int as n from trainsync.schema_migrations');
      expect(rows[0]!.n).toBe(migrations.length);
      const view = await client.query("select 1 from information_schema.views where table_schema = 'training' and table_name = 'assignment_status'");
      expect(view.rowCount).toBe(1);
    } finally {
      await client.end();
    }

    const second = await runCli(['migrate'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim().split('\n')).toEqual(['migrations: up to date', `views: ${views.length} applied`]);
  });
});

describe('trainsync status', () => {
  let h: SyncHarness;
  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 0, users: 10, courses: 12 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('exits 0 and reports the queues and the last run, as a table and as JSON', async () => {
    const courses = summaryOf(await h.sync(['courses']), 'courses');

    const json = await runCli(['status', '--json'], h.env);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as {
      queues: Array<{ queue: string; counts: Record<string, number> }>;
      runs: Array<{ id: number; resource: string; status: string; inserted: number }>;
      failedJobs: unknown[];
    };
    expect(report.queues.map((q) => q.queue)).toEqual([...QUEUE_NAMES]);
    expect(report.queues.find((q) => q.queue === 'sync')?.counts).toMatchObject({ completed: 1, failed: 0, active: 0 });
    expect(report.runs).toEqual([expect.objectContaining({ id: courses.runId, resource: 'courses', status: 'succeeded', inserted: 12 })]);
    expect(report.failedJobs).toEqual([]);

    const table = await runCli(['status'], h.env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('Last run per resource');
    expect(table.stdout).toMatch(/courses\s*│\s*ok\s*│/);
  });
});
