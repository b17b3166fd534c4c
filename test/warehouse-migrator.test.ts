import { createHash } from 'node:crypto';
import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createLogger } from '../src/runtime/log.ts';
import { ensureDatabase } from '../src/warehouse/ensure-database.ts';
import { migrate, MigrationChangedError, SQL_DIR } from '../src/warehouse/migrator.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { ADMIN_URL, createTestDatabase, databaseUrl, type TestDatabase } from './helpers/db.ts';

const log = createLogger('silent');

describe('migrate', () => {
  const databases: TestDatabase[] = [];
  let migrationFiles: string[];
  let viewFiles: string[];
  let scratch: string;

  beforeAll(async () => {
    migrationFiles = (await readdir(path.join(SQL_DIR, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
    viewFiles = (await readdir(path.join(SQL_DIR, 'views'))).filter((f) => f.endsWith('.sql'));
    scratch = await mkdtemp(path.join(os.tmpdir(), 'trainsync-sql-'));
  });

  afterAll(async () => {
    await Promise.all(databases.map((d) => d.drop()));
    await rm(scratch, { recursive: true, force: true });
  });

  async function emptyDatabase(): Promise<TestDatabase> {
    const t = await createTestDatabase({ migrated: false });
    databases.push(t);
    return t;
  }

  it('applies every migration once, with its checksum, and nothing on the second run', async () => {
    const t = await emptyDatabase();
    const first = await migrate(t.pool, log);
    expect(first.applied).toEqual(migrationFiles);
    expect(first.views).toBe(viewFiles.length);

    const { rows } = await t.pool.query<{ name: string; checksum: string }>(
      'select name, checksum from trainsync.schema_migrations order by name',
    );
    expect(rows.map((r) => r.name)).toEqual(migrationFiles);
    const text = await readFile(path.join(SQL_DIR, 'migrations', migrationFiles[0]!), 'utf8');
    expect(rows[0]!.checksum).toBe(createHash('sha256').update(text).digest('hex'));

    const second = await migrate(t.pool, log);
    expect(second.applied).toEqual([]);
    // Nothing changed: the views are left as they are (no lock taken on the tables).
    expect(second.views).toBe(0);
    // `trainsync migrate` applies them anyway (a view dropped by hand comes back).
    await t.pool.query('drop view training.assignment_status');
    const repaired = await migrate(t.pool, log, { reapplyViews: true });
    expect(repaired.views).toBe(viewFiles.length);
    const view = await t.pool.query("select to_regclass('training.assignment_status') as v");
    expect(view.rows[0].v).not.toBeNull();
    const count = await t.pool.query('select count(*)::int as n from trainsync.schema_migrations');
    expect(count.rows[0].n).toBe(migrationFiles.length);
  });

  it('applies each migration exactly once when three processes migrate at the same moment', async () => {
    const t = await emptyDatabase();
    const pools = [1, 2, 3].map(() => createPool(t.ownerUrl, { max: 1 }));
    try {
      const outcomes = await Promise.all(pools.map((pool) => migrate(pool, log)));
      expect(outcomes.flatMap((o) => o.applied).sort()).toEqual(migrationFiles);
      expect(outcomes.filter((o) => o.applied.length > 0)).toHaveLength(1);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    const count = await t.pool.query('select count(*)::int as n from trainsync.schema_migrations');
    expect(count.rows[0].n).toBe(migrationFiles.length);
  });

  it('picks up a new numbered file and refuses an applied migration that was edited', async () => {
    const t = await emptyDatabase();
    const dir = path.join(scratch, 'edited');
    await cp(SQL_DIR, dir, { recursive: true });
    await migrate(t.pool, log, { sqlDir: dir });

    await writeFile(path.join(dir, 'migrations', '0999_extra.sql'), 'create table training.extra_thing (id int);\n');
    const added = await migrate(t.pool, log, { sqlDir: dir });
    expect(added.applied).toEqual(['0999_extra.sql']);

    const edited = path.join(dir, 'migrations', migrationFiles[0]!);
    const before = createHash('sha256').update(await readFile(edited, 'utf8')).digest('hex');
    await appendFile(edited, '\n-- a later edit\n');
    const after = createHash('sha256').update(await readFile(edited, 'utf8')).digest('hex');
    await writeFile(path.join(dir, 'migrations', '1000_more.sql'), 'create table training.more_thing (id int);\n');

    const error = await migrate(t.pool, log, { sqlDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationChangedError);
    const message = (error as Error).message;
    expect(message).toContain(migrationFiles[0]!);
    expect(message).toContain(before);
    expect(message).toContain(after);
    expect(message).toContain('migrations are append-only: add a new numbered file instead');
    // Refused before anything else was applied.
    const more = await t.pool.query("select to_regclass('training.more_thing') as t");
    expect(more.rows[0].t).toBeNull();
    // The lock was released: a later run still works once the file is restored.
    await writeFile(edited, (await readFile(edited, 'utf8')).replace('\n-- a later edit\n', ''));
    expect((await migrate(t.pool, log, { sqlDir: dir })).applied).toEqual(['1000_more.sql']);
  });

  it('applies the views again when a view file changed or a migration ran, and only then', async () => {
    const t = await emptyDatabase();
    const dir = path.join(scratch, 'views-changed');
    await cp(SQL_DIR, dir, { recursive: true });
    await migrate(t.pool, log, { sqlDir: dir });
    expect((await migrate(t.pool, log, { sqlDir: dir })).views).toBe(0);

    await writeFile(path.join(dir, 'views', '95_extra_view.sql'), 'create or replace view training.extra_view as select 1 as one;\n');
    expect((await migrate(t.pool, log, { sqlDir: dir })).views).toBe(viewFiles.length + 1);
    const extra = await t.pool.query("select to_regclass('training.extra_view') as v");
    expect(extra.rows[0].v).not.toBeNull();
    expect((await migrate(t.pool, log, { sqlDir: dir })).views).toBe(0);

    await writeFile(path.join(dir, 'migrations', '0999_extra.sql'), 'create table training.extra_thing (id int);\n');
    const migrated = await migrate(t.pool, log, { sqlDir: dir });
    expect(migrated.applied).toEqual(['0999_extra.sql']);
    expect(migrated.views).toBe(viewFiles.length + 1);
  });

  it('starts beside a load in progress without waiting for its locks when nothing changed', async () => {
    const t = await emptyDatabase();
    await migrate(t.pool, log);
    // A load's transaction holding a row lock mode on the tables the row-security views name.
    const load = new pg.Client({ connectionString: t.ownerUrl });
    await load.connect();
    // A process starting: re-creating the views or policies would need an ACCESS EXCLUSIVE
    // lock on those tables, and fails at once (lock_timeout) instead of waiting behind the load.
    const starting = new pg.Pool({ connectionString: t.ownerUrl, max: 1, options: '-c lock_timeout=500' });
    try {
      await load.query('begin');
      await load.query('lock table training.results, training.courses, training.users in row exclusive mode');
      const outcome = await migrate(starting, log);
      expect(outcome).toEqual({ applied: [], views: 0 });
      // The same with the views applied anyway is refused by the held lock: the test can fail.
      await expect(migrate(starting, log, { reapplyViews: true })).rejects.toThrow(/lock timeout/);
    } finally {
      await load.query('rollback').catch(() => undefined);
      await load.end();
      await starting.end();
    }
  });

  it('rolls back a failing migration and names it', async () => {
    const t = await emptyDatabase();
    const dir = path.join(scratch, 'failing');
    await cp(SQL_DIR, dir, { recursive: true });
    await writeFile(
      path.join(dir, 'migrations', '0999_broken.sql'),
      'create table training.half_done (id int);\nselect * from no_such_table;\n',
    );
    await expect(migrate(t.pool, log, { sqlDir: dir })).rejects.toThrow(/migration 0999_broken\.sql failed: .*no_such_table/);
    const { rows } = await t.pool.query(
      "select to_regclass('training.half_done') as t, (select count(*)::int from trainsync.schema_migrations where name = '0999_broken.sql') as n",
    );
    expect(rows[0]).toEqual({ t: null, n: 0 });
  });

  it('creates the read-only BI role: select on training; nothing in trainsync (hr_reconciliation reads it as its owner)', async () => {
    const t = await createTestDatabase();
    databases.push(t);
    const { rows } = await t.pool.query(`
      select
        (select rolcanlogin from pg_roles where rolname = 'trainsync_reader') as can_login,
        has_schema_privilege('trainsync_reader', 'training', 'USAGE') as training_usage,
        has_table_privilege('trainsync_reader', 'training.results', 'SELECT') as results_select,
        has_table_privilege('trainsync_reader', 'training.result_details', 'SELECT') as view_select,
        has_table_privilege('trainsync_reader', 'training.users', 'SELECT') as users_select,
        has_table_privilege('trainsync_reader', 'training.results', 'INSERT') as results_insert,
        has_table_privilege('trainsync_reader', 'training.results', 'UPDATE') as results_update,
        has_schema_privilege('trainsync_reader', 'trainsync', 'USAGE') as trainsync_usage,
        has_table_privilege('trainsync_reader', 'trainsync.runs', 'SELECT') as runs_select,
        has_table_privilege('trainsync_reader', 'trainsync.quarantine', 'SELECT') as quarantine_select,
        has_table_privilege('trainsync_reader', 'trainsync.provisioning_actions', 'SELECT') as actions_select,
        has_column_privilege('trainsync_reader', 'trainsync.provisioning_actions', 'status', 'SELECT') as actions_status_select,
        has_column_privilege('trainsync_reader', 'trainsync.provisioning_actions', 'after', 'SELECT') as actions_after_select`);
    expect(rows[0]).toEqual({
      can_login: false,
      training_usage: true,
      results_select: true,
      view_select: true,
      users_select: true,
      results_insert: false,
      results_update: false,
      // Nothing in schema trainsync: training.hr_reconciliation reads it with its owner's rights.
      trainsync_usage: false,
      runs_select: false,
      quarantine_select: false,
      actions_select: false,
      actions_status_select: false,
      actions_after_select: false,
    });
    // Default privileges: a table added by a later migration is readable too.
    await t.pool.query('create table training.later_table (id int)');
    const later = await t.pool.query("select has_table_privilege('trainsync_reader', 'training.later_table', 'SELECT') as ok");
    expect(later.rows[0].ok).toBe(true);
  });
});

describe('ensureDatabase', () => {
  it('creates a missing database, tolerating concurrent creators, and leaves an existing one alone', async () => {
    const name = `trainsync_test_${Math.floor(Date.now() / 1000)}_ensure${process.pid}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await Promise.all([1, 2, 3].map(() => ensureDatabase(databaseUrl(name), log)));
      await ensureDatabase(databaseUrl(name), log);
      const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
      expect(rowCount).toBe(1);
    } finally {
      await admin.query(`drop database if exists ${admin.escapeIdentifier(name)} with (force)`);
      await admin.end();
    }
  });
});
