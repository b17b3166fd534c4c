import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { syncResources } from '../src/sync/catalog-resources.ts';
import type { Resource } from '../src/sync/resources/resource.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * A resource's table is written twice: its columns in its declaration
 * (src/sync/resources/<name>.ts), and the table in a migration. This holds the two
 * together: for every declaration, each table it writes exists in the migrated database
 * with exactly the columns the declaration names plus the ones its kind's loader keeps
 * (org, the seen/removed instants), each of the declared type, not null where declared so.
 */

const RESOURCES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/sync/resources');

/** A column as declared: its name and, where the declaration gives one, its SQL type (`uuid not null`). */
type Declared = readonly [name: string, type: string | undefined];

/** Every table a declaration writes, with the columns it must have. */
interface ExpectedTable {
  table: string;
  columns: Declared[];
}

/** What the generic loaders keep on a listed row besides its declared columns (load-listing, load-staged). */
const SEEN: Declared[] = [
  ['first_seen_at', 'timestamptz not null'],
  ['last_seen_at', 'timestamptz not null'],
  ['removed_at', 'timestamptz'],
  ['updated_at', 'timestamptz not null'],
];
const ORG: Declared = ['org', 'text not null'];

/** The tables of a declaration, by its kind's loader. */
function expectedTables(resource: Resource<never>): ExpectedTable[] {
  switch (resource.kind) {
    case 'snapshot': {
      const { table } = resource;
      const keys: Declared[] = table.key.map((k) => [k, 'uuid not null']);
      const tables: ExpectedTable[] = [{ table: table.table, columns: [ORG, ...keys, ...table.columns, ...SEEN] }];
      for (const child of table.children ?? []) {
        if (child.kind === 'set') tables.push({ table: child.table, columns: [ORG, ...keys, ...child.columns] });
        else tables.push({ table: child.table.table, columns: [ORG, [child.table.idColumn as string, 'uuid not null'], ...child.table.columns, ...SEEN] });
      }
      return tables;
    }
    case 'windowed': {
      const { table } = resource;
      const key: Declared = [table.key, 'uuid not null'];
      const tables: ExpectedTable[] = [
        { table: table.table, columns: [ORG, key, ...table.columns, ...SEEN] },
        { table: table.sightings, columns: [ORG, ['run_id', 'bigint'], [table.key, 'uuid']] },
      ];
      if (table.idSet) tables.push({ table: table.idSet.table, columns: [ORG, key, [table.idSet.column, 'uuid not null']] });
      return tables;
    }
    case 'reading': {
      const { table } = resource;
      return [{ table: table.table, columns: [ORG, [table.key, 'timestamptz not null'], ...table.columns.map((c): Declared => [c, undefined])] }];
    }
  }
}

/** Every resource declared in src/sync/resources/ (each file's exported declarations). */
async function declarations(): Promise<Array<Resource<never>>> {
  const found: Array<Resource<never>> = [];
  for (const file of (await readdir(RESOURCES_DIR)).filter((f) => f.endsWith('.ts')).sort()) {
    const module = (await import(path.join(RESOURCES_DIR, file))) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      if (typeof value === 'object' && value !== null && 'kind' in value && 'table' in value && 'name' in value) found.push(value as Resource<never>);
    }
  }
  return found;
}

interface Column {
  name: string;
  type: string;
  notNull: boolean;
}

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** The table's columns in the migrated database (none when it does not exist). */
async function columnsOf(table: string): Promise<Column[]> {
  const { rows } = await database.pool.query<Column>(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as "notNull"
       from pg_attribute a
      where a.attrelid = to_regclass($1) and a.attnum > 0 and not a.attisdropped
      order by a.attnum`,
    [table],
  );
  return rows;
}

/** A declared type as Postgres names it (`timestamptz` → `timestamp with time zone`), and whether it says not null. */
async function normalised(type: string): Promise<{ type: string; notNull: boolean }> {
  const notNull = /\s+not null$/i.test(type);
  const base = type.replace(/\s+not null$/i, '').trim();
  const { rows } = await database.pool.query<{ type: string | null }>('select format_type(to_regtype($1), null) as type', [base]);
  return { type: rows[0]?.type ?? `unknown type ${base}`, notNull };
}

describe("each resource declaration's columns against its table in the migrated database", () => {
  it('finds every declaration, each one in the catalog (jobs/index.ts) and every sync job declared', async () => {
    const names = (await declarations()).map((r) => r.name);
    expect(names.length).toBeGreaterThan(0);
    expect([...names].sort()).toEqual([...syncResources(allJobs)].sort());
  });

  it('has exactly the declared columns, of the declared types, not null where declared', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const resource of await declarations()) {
      for (const expected of expectedTables(resource)) {
        const actual = await columnsOf(expected.table);
        if (actual.length === 0) {
          problems.push(`${resource.name}: ${expected.table} is not in the migrated database`);
          continue;
        }
        const declaredNames = expected.columns.map(([name]) => name);
        for (const name of declaredNames.filter((n, i) => declaredNames.indexOf(n) !== i)) problems.push(`${resource.name}: ${expected.table}.${name} is declared twice`);
        for (const column of actual.filter((c) => !declaredNames.includes(c.name))) problems.push(`${resource.name}: ${expected.table}.${column.name} is in the migration, not in the declaration`);
        for (const [name, type] of expected.columns) {
          const column = actual.find((c) => c.name === name);
          if (!column) {
            problems.push(`${resource.name}: ${expected.table}.${name} is declared, not in the migration`);
            continue;
          }
          checked += 1;
          if (type === undefined) continue;
          const want = await normalised(type);
          if (column.type !== want.type) problems.push(`${resource.name}: ${expected.table}.${name} is ${column.type} in the migration, ${want.type} in the declaration`);
          if (want.notNull && !column.notNull) problems.push(`${resource.name}: ${expected.table}.${name} is declared not null, nullable in the migration`);
        }
      }
    }
    expect(problems).toEqual([]);
    // Not vacuous: every resource's tables were found and compared column by column.
    expect(checked).toBeGreaterThan(50);
  });
});
