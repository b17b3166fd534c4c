import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { APP_ROLE } from '../src/warehouse/connection-settings.ts';
import { createScopes } from '../src/warehouse/scope.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * trainsync reaches Postgres through pg's public API only: a client's private fields (its
 * queues, its pipeline flag, its socket) are pg's to change in any minor release, and code
 * that relied on them would break silently (a statement sent at the wrong moment, not an
 * error). The scope (src/warehouse/scope.ts) once switched pg's pipeline mode on and off and
 * corked its socket; these tests fail should anything in src/ do so again.
 */

const SRC = path.resolve(import.meta.dirname, '../src');

/** pg's private or undocumented client state: its `_`-fields, readiness, pipeline flag and socket. */
const PRIVATE_PG: readonly RegExp[] = [
  /\._[A-Za-z]\w*/, // _queryQueue, _activeQuery, _sentQueryQueue, _pulseQueryQueue, _connected …
  /\breadyForQuery\b/,
  /\.connection\s*\.\s*stream\b/,
  /\.(un)?cork\s*\(/,
  /\.pipeline\s*=[^=]/,
  /['"](_queryQueue|_activeQuery|_sentQueryQueue|readyForQuery|pipeline)['"]/,
];

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

/** The code of a file without its comments (a comment may name pg's fields to say why they are not used). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe("pg's public API only", () => {
  it('no file in src/ reads or writes a private field of a pg client, its pipeline flag or its socket', async () => {
    const files = await sourceFiles(SRC);
    // Not vacuous: the scope's file is read, and each pattern catches what it is for.
    expect(files.some((f) => f.endsWith(path.join('warehouse', 'scope.ts')))).toBe(true);
    const samples = ['c._queryQueue.length', 'client.readyForQuery', 'client.connection.stream.cork()', 'state.pipeline = true', "key === '_activeQuery'"];
    for (const sample of samples) expect(PRIVATE_PG.some((re) => re.test(sample)), sample).toBe(true);
    expect(PRIVATE_PG.some((re) => re.test('if (client.pipeline === false) stream.pipeline(a, b)'))).toBe(false);
    const found: string[] = [];
    for (const file of files) {
      const lines = code(await readFile(file, 'utf8')).split('\n');
      lines.forEach((line, i) => {
        if (PRIVATE_PG.some((re) => re.test(line))) found.push(`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });
});

/** A pg client whose pipeline mode is fixed at construction, as pg's types declare it (readonly): writing it throws. */
class FixedPipelineClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    Object.defineProperty(this, 'pipeline', { value: false, writable: false, configurable: false });
  }
}

describe("the scope on a client whose pipeline mode can't be switched", () => {
  let t: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    t = await createTestDatabase();
    for (const org of ['a', 'b']) {
      await t.pool.query(`insert into training.organisations (slug, name) values ($1, $1) on conflict do nothing`, [org]);
      await t.pool.query(`insert into trainsync.watermarks (org, resource, value) values ($1, 'results', $1)`, [org]);
    }
    pool = new pg.Pool({ connectionString: t.url, max: 1, Client: FixedPipelineClient, onConnect: async (client) => void (await client.query(`set role ${APP_ROLE}`)) });
  });

  afterAll(async () => {
    await pool?.end();
    await t?.drop();
  });

  it('runs scoped statements and transactions as on any client', async () => {
    const scopes = createScopes(pool, createLogger('error', new Writable({ write: (_chunk, _encoding, callback) => callback() })));
    const a = scopes.scope('a');
    expect(await a.db.selectFrom('trainsync.watermarks').select('value').execute()).toEqual([{ value: 'a' }]);
    expect(await a.transaction(async ({ db }) => db.selectFrom('trainsync.watermarks').select('org').execute())).toEqual([{ org: 'a' }]);
    await expect(a.db.insertInto('trainsync.watermarks').values({ org: 'b', resource: 'users', value: 'x' }).execute()).rejects.toMatchObject({ code: '42501' });
  });
});
