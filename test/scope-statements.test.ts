import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { APP_ROLE } from '../src/warehouse/connection-settings.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { createScopes, type OrgScopes } from '../src/warehouse/scope.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * A scoped statement outside a transaction runs in a scoped transaction of its own (BEGIN and
 * the scope in one simple query, the statement, COMMIT; pg's public API only): on one pooled
 * connection, a failed statement leaves no transaction nor scope behind, concurrent statements
 * each get their own answer in their own scope, and COPY runs on the same connection.
 */

let t: TestDatabase;
let pool: pg.Pool;
let scopes: OrgScopes;

beforeAll(async () => {
  t = await createTestDatabase();
  for (const org of ['a', 'b']) {
    await t.pool.query(`insert into training.organisations (slug, name) values ($1, $1) on conflict do nothing`, [org]);
    await t.pool.query(`insert into trainsync.watermarks (org, resource, value) values ($1, 'results', $1)`, [org]);
  }
  // One connection: every statement below reuses the one before's.
  pool = createPool(t.url, { max: 1, role: APP_ROLE, applicationName: 'trainsync-test-pipeline' });
  scopes = createScopes(pool, createLogger('error', new Writable({ write: (_chunk, _encoding, callback) => callback() })));
});

afterAll(async () => {
  await pool?.end();
  await t?.drop();
});

/** What the pooled connection holds between statements: no transaction, no scope. */
async function leftOver(): Promise<{ org: string | null; inTransaction: boolean }> {
  const { rows } = await pool.query<{ org: string | null; xact: string | null }>(`select nullif(current_setting('trainsync.org', true), '') as org, pg_current_xact_id_if_assigned()::text as xact`);
  const status = await pool.query<{ now: Date; stmt: Date }>(`select now() as now, statement_timestamp() as stmt`);
  return { org: rows[0]!.org, inTransaction: rows[0]!.xact !== null || status.rows[0]!.now.getTime() !== status.rows[0]!.stmt.getTime() };
}

describe('scoped statements in transactions of their own', () => {
  it('a statement runs scoped and leaves nothing behind; a refused one rolls back and leaves nothing behind either', async () => {
    const a = scopes.scope('a');
    expect(await a.db.selectFrom('trainsync.watermarks').select('value').execute()).toEqual([{ value: 'a' }]);
    expect(await leftOver()).toEqual({ org: null, inTransaction: false });
    const refused = a.db.insertInto('trainsync.watermarks').values({ org: 'b', resource: 'users', value: 'x' }).execute();
    await expect(refused).rejects.toMatchObject({ code: '42501' });
    expect(await leftOver()).toEqual({ org: null, inTransaction: false });
    const failing = sql`select 1 / 0`.execute(a.db);
    await expect(failing).rejects.toMatchObject({ code: '22012' });
    expect(await leftOver()).toEqual({ org: null, inTransaction: false });
    // The row of a written before the failure is committed; b's rows were never visible.
    await a.db.updateTable('trainsync.watermarks').set({ value: 'a2' }).execute();
    const { rows } = await t.pool.query<{ org: string; value: string }>(`select org, value from trainsync.watermarks where resource = 'results' order by org`);
    expect(rows).toEqual([{ org: 'a', value: 'a2' }, { org: 'b', value: 'b' }]);
  });

  it('statements sent together on one connection each get their own answer, each in its own scope', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const org = i % 2 === 0 ? 'a' : 'b';
        return scopes.scope(org).db.selectFrom('trainsync.watermarks').select(['org', sql<number>`${i}::int`.as('i')]).execute();
      }),
    );
    answers.forEach((rows, i) => expect(rows).toEqual([{ org: i % 2 === 0 ? 'a' : 'b', i }]));
  });

  it('statements sent together on one lent client each run scoped, in a transaction of their own', async () => {
    const seen = await scopes.scope('a').lend((client) =>
      Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          client.query<{ org: string; i: number; xact: string }>(`select org, $1::int as i, pg_current_xact_id()::text as xact from trainsync.watermarks`, [i]),
        ),
      ),
    );
    seen.forEach(({ rows }, i) => expect(rows).toMatchObject([{ org: 'a', i }]));
    expect(new Set(seen.map(({ rows }) => rows[0]!.xact)).size).toBe(10);
    expect(await leftOver()).toEqual({ org: null, inTransaction: false });
  });

  it('a transaction (its BEGIN and set_config in one query) runs COPY on the connection the statements used', async () => {
    const a = scopes.scope('a');
    await a.db.selectFrom('trainsync.watermarks').select('org').execute();
    const seen = await a.transaction(async ({ client, db }) => {
      await client.query('create temp table copied (value text) on commit drop');
      await pipeline(Readable.from(['one\n', 'two\n']), client.query(copyFrom('copy copied (value) from stdin')));
      const copied = await sql<{ n: number }>`select count(*)::int as n from copied`.execute(db);
      const orgs = await db.selectFrom('trainsync.watermarks').select('org').execute();
      return { copied: copied.rows[0]!.n, orgs: orgs.map((r) => r.org) };
    });
    expect(seen).toEqual({ copied: 2, orgs: ['a'] });
    expect(await leftOver()).toEqual({ org: null, inTransaction: false });
  });
});
