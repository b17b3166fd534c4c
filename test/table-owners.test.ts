import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Tables with one owner: every statement that names a trainsync.* table sits in that table's
 * store, and everyone else (other wings, the commands, the console's data/) calls the store
 * with their scoped handle. This test reads src/ and jobs/ for each table named in SQL text
 * (`from`, `join`, `into`, `update`, `table`, `truncate` before the name) or as a Kysely
 * table literal (`'trainsync.runs'`, `'trainsync.runs as r'`, but not a row type's key,
 * `'trainsync.runs': RunsTable`), comments left out, and fails on a file that is neither the
 * owner nor an exception listed below with its reason.
 *
 * The training.* tables are the warehouse's product: anyone reads them (the console, the
 * reports, the BI views). Each has one writer: the only file whose statements insert into,
 * update, delete from, truncate or COPY into it (SQL text or Kysely's insertInto, updateTable,
 * deleteFrom), or, for a synced resource's tables, whose declaration names it as the table the
 * generic loaders write (`table: 'training.courses'`).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Each table of sql/migrations (trainsync schema) and the file that owns its statements. */
const OWNERS: Record<string, readonly string[]> = {
  identities: ['src/provisioning/apply/identities-store.ts'],
  provisioning_actions: ['src/provisioning/apply/actions-store.ts'],
  feeds: ['src/provisioning/apply/feeds-store.ts'],
  runs: ['src/sync/runs-store.ts'],
  sync_schedules: ['src/sync/schedules-store.ts'],
  checkpoints: ['src/sync/sync-state.ts'],
  watermarks: ['src/sync/sync-state.ts'],
  unfinished_windows: ['src/sync/sync-state.ts'],
  quarantine: ['src/sync/sync-state.ts'],
  // Declared by the results resource; the generic staged loader's statements take it from the declaration.
  result_sightings: ['src/sync/resources/results.ts'],
  // Two files of one wing: the held plans' lifecycle and the pipeline's hold step.
  held_plans: ['src/provisioning/held-plans.ts', 'src/provisioning/pipeline/hold.ts'],
  scim_users: ['src/scim/store.ts'],
  scim_groups: ['src/scim/groups.ts'],
  webhook_events: ['src/webhooks/store.ts'],
  webhook_event_results: ['src/webhooks/store.ts'],
  webhook_refusals: ['src/webhooks/refusals.ts'],
  webhook_refusal_counts: ['src/webhooks/refusals.ts'],
  console_sessions: ['src/console/sessions.ts'],
  console_audit: ['src/console/data/provisioning.ts'],
};

/** Each table of sql/migrations in schema training and the one file that writes it. */
const WRITERS: Record<string, string> = {
  organisations: 'src/warehouse/organisations.ts',
  employees: 'src/provisioning/employees-store.ts',
  employee_history: 'src/provisioning/employees-store.ts',
  group_members: 'src/provisioning/apply/identities-store.ts',
  courses: 'src/sync/resources/courses.ts',
  course_categories: 'src/sync/resources/courses.ts',
  results: 'src/sync/resources/results.ts',
  result_filter_answers: 'src/sync/resources/results.ts',
  reporting_filters: 'src/sync/resources/filters.ts',
  reporting_filter_answers: 'src/sync/resources/filters.ts',
  seat_usage: 'src/sync/resources/seats.ts',
  users: 'src/sync/resources/users.ts',
  groups: 'src/sync/resources/groups.ts',
  group_courses: 'src/sync/resources/groups.ts',
};

/** Tables dropped by a later migration: nothing may name them. */
const DROPPED = new Set(['scim_held_actions']);

/** Files that name a table they do not own, and why: each a known crossing, not a precedent. */
const EXCEPTIONS: Record<string, Record<string, string>> = {
  identities: {
    'src/provisioning/employees-store.ts':
      "the employee snapshot's upsert, and the filling in of new accounts, take each employee's account from the identity in the same statement",
    'src/commands/demo.ts': "the demo's row count of each table it shows (a fixed list)",
  },
  provisioning_actions: {
    'src/provisioning/reconciliation.ts':
      "the reconciliation report's age of the platform listing: provisioning's changes since, in one statement with training.users and training.employees",
    'src/commands/demo.ts': "the demo's row count of each table it shows (a fixed list)",
  },
  runs: {
    'src/warehouse/load-staged.ts': "a full walk marks results removed against its run's start, in the marking statement (microseconds, the database's clock)",
  },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The code without its comments: block comments, `//` comments (not a URL's `://`), SQL's `-- ` comments. */
function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:\\'"`])\/\/.*$/gm, '$1')
    .replace(/(^|\s)-- .*$/gm, '$1');
}

/** The migrations' tables of a schema. */
function migratedTables(schema = 'trainsync'): string[] {
  const dir = join(ROOT, 'sql/migrations');
  const create = new RegExp(`create table ${schema}\\.(\\w+)`, 'gi');
  const names = readdirSync(dir).flatMap((file) => [...readFileSync(join(dir, file), 'utf8').matchAll(create)].map((m) => m[1]!));
  return [...new Set(names)].sort();
}

/** Whether the code writes training.`table`: a writing statement, a Kysely write, or a resource declaration's table. */
function writesTable(code: string, table: string): boolean {
  const statement = new RegExp(`\\b(insert\\s+into|update|delete\\s+from|truncate(\\s+table)?|copy)\\s+training\\.${table}\\b`, 'i');
  const kysely = new RegExp(`\\b(insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\\(\\s*(['"\`])training\\.${table}(\\s+as\\s+\\w+)?\\2`);
  const declared = new RegExp(`\\btable:\\s*(['"\`])training\\.${table}\\1`);
  return statement.test(code) || kysely.test(code) || declared.test(code);
}

function namesTable(code: string, table: string): boolean {
  const literal = new RegExp(`(['"\`])trainsync\\.${table}(\\s+as\\s+\\w+)?\\1(?!\\s*:)`);
  const statement = new RegExp(`\\b(from|join|into|update|table|truncate)\\s+trainsync\\.${table}\\b`, 'i');
  return literal.test(code) || statement.test(code);
}

const files = [...sourceFiles('src'), ...sourceFiles('jobs')].map((path) => ({ path: relative(ROOT, join(ROOT, path)).split('\\').join('/'), code: withoutComments(readFileSync(join(ROOT, path), 'utf8')) }));

describe('tables with one owner', () => {
  it('every trainsync table of the migrations has an owner (or was dropped)', () => {
    const unowned = migratedTables().filter((t) => OWNERS[t] === undefined && !DROPPED.has(t));
    expect(unowned, 'a new table needs its store in OWNERS').toEqual([]);
  });

  it('every owner and exception names a file that exists and names the table', () => {
    const stale: string[] = [];
    for (const [table, owners] of Object.entries(OWNERS)) {
      for (const owner of owners) if (!files.some((f) => f.path === owner && namesTable(f.code, table))) stale.push(`${table}: ${owner}`);
    }
    for (const [table, exceptions] of Object.entries(EXCEPTIONS)) {
      for (const path of Object.keys(exceptions)) if (!files.some((f) => f.path === path && namesTable(f.code, table))) stale.push(`${table}: exception ${path} (drop it)`);
    }
    expect(stale).toEqual([]);
  });

  it('no file outside its store names a table', () => {
    const crossings: string[] = [];
    for (const table of [...Object.keys(OWNERS), ...DROPPED]) {
      const allowed = new Set([...(OWNERS[table] ?? []), ...Object.keys(EXCEPTIONS[table] ?? {})]);
      for (const file of files) {
        if (!allowed.has(file.path) && namesTable(file.code, table)) crossings.push(`${file.path} names trainsync.${table} (owner: ${(OWNERS[table] ?? ['none: dropped']).join(', ')})`);
      }
    }
    expect(crossings, 'go through the table\'s store: see "Where a change goes" in docs/architecture.md').toEqual([]);
  });

  it('every training table of the migrations has its writer, and the writer writes it', () => {
    expect(migratedTables('training').filter((t) => WRITERS[t] === undefined), 'a new training table needs its writer in WRITERS').toEqual([]);
    const stale = Object.entries(WRITERS).filter(([table, writer]) => !files.some((f) => f.path === writer && writesTable(f.code, table)));
    expect(stale.map(([table, writer]) => `${table}: ${writer}`)).toEqual([]);
  });

  it('no file but its writer writes a training table', () => {
    const writers: string[] = [];
    for (const [table, writer] of Object.entries(WRITERS)) {
      for (const file of files) if (file.path !== writer && writesTable(file.code, table)) writers.push(`${file.path} writes training.${table} (its writer: ${writer})`);
    }
    expect(writers, 'write through the table\'s store: see "Tables and their owners" in docs/architecture.md').toEqual([]);
  });

  it('sees a training table written, not one read', () => {
    expect(writesTable('`update training.employees e set user_id = …`', 'employees')).toBe(true);
    expect(writesTable("db.insertInto('training.organisations')", 'organisations')).toBe(true);
    expect(writesTable("db.deleteFrom('training.organisations')", 'organisations')).toBe(true);
    expect(writesTable("copy training.results (result_id) from stdin", 'results')).toBe(true);
    expect(writesTable("table: 'training.courses',", 'courses')).toBe(true);
    expect(writesTable('sql`select 1 from training.employees e`', 'employees')).toBe(false);
    expect(writesTable("db.selectFrom('training.groups as g')", 'groups')).toBe(false);
    expect(writesTable('`update training.employee_history h set`', 'employees')).toBe(false);
  });

  it('sees a table named in SQL or Kysely, not in a comment, a message or a row type', () => {
    expect(namesTable("db.selectFrom('trainsync.runs')", 'runs')).toBe(true);
    expect(namesTable("innerJoin('trainsync.runs as r', …)", 'runs')).toBe(true);
    expect(namesTable('sql`select 1 from trainsync.runs r`', 'runs')).toBe(true);
    expect(namesTable('`update trainsync.runs set`', 'runs')).toBe(true);
    expect(namesTable("'trainsync.runs': RunsTable;", 'runs')).toBe(false);
    expect(namesTable("'not in trainsync.identities, not in the feed'", 'identities')).toBe(false);
    expect(namesTable("db.selectFrom('trainsync.runs_archive')", 'runs')).toBe(false);
    expect(namesTable(withoutComments('/** rows from trainsync.runs */\n// join trainsync.runs\nconst x = 1;'), 'runs')).toBe(false);
  });
});
