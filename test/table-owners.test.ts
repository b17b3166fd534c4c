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

/** Tables dropped by a later migration: nothing may name them. */
const DROPPED = new Set(['scim_held_actions']);

/** Files that name a table they do not own, and why: each a known crossing, not a precedent. */
const EXCEPTIONS: Record<string, Record<string, string>> = {
  identities: {
    'src/warehouse/load-employees.ts':
      "the employee snapshot's upsert takes each employee's account from the identity in the same statement; the warehouse may not import the provisioning wing",
    'src/commands/demo.ts': "the demo's row count of each table it shows (a fixed list)",
  },
  provisioning_actions: {
    'src/warehouse/reconciliation.ts':
      "the reconciliation report's age of the platform listing: provisioning's changes since, in one statement with training.users and training.employees; the warehouse may not import the provisioning wing",
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

/** The migrations' trainsync tables. */
function migratedTables(): string[] {
  const dir = join(ROOT, 'sql/migrations');
  const names = readdirSync(dir).flatMap((file) => [...readFileSync(join(dir, file), 'utf8').matchAll(/create table trainsync\.(\w+)/gi)].map((m) => m[1]!));
  return [...new Set(names)].sort();
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
