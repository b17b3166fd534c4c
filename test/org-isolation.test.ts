import { Writable } from 'node:stream';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { APP_ROLE } from '../src/warehouse/connection-settings.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { createScopes, type OrgScopes } from '../src/warehouse/scope.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { exitCodeFor } from '../src/commands/options/exit-codes.ts';
import { AppRoleError, checkAppRole } from '../src/warehouse/app-role.ts';
import { findIdentity } from '../src/provisioning/apply/identities-store.ts';
import { createTestDatabase, withAdmin, type TestDatabase } from './helpers/db.ts';

/**
 * Postgres is the guard, not the queries: under organisation a's scoped handle, statements
 * written WITHOUT any organisation filter — reads, updates, deletes, inserts naming another
 * organisation — see and change nothing of b or c, in every table that carries an org column
 * and in every view. The three organisations share their platform ids (the same course,
 * user and result GUIDs, the same employee ids), as organisations of one reseller do.
 */

const ORGS = ['a', 'b', 'c'] as const;
const COURSE = '11111111-1111-4111-8111-111111111111';
const USER = '22222222-2222-4222-8222-222222222222';
const RESULT = '33333333-3333-4333-8333-333333333333';
const GROUP = '44444444-4444-4444-8444-444444444444';
const FILTER = '55555555-5555-4555-8555-555555555555';
const ANSWER = '66666666-6666-4666-8666-666666666666';
const HASH = 'a'.repeat(64);

let t: TestDatabase;
let appPool: pg.Pool;
let scopes: OrgScopes;
const logged: string[] = [];

/** One organisation's rows in every table family, written by the owner (no row security). */
async function seed(org: string): Promise<void> {
  const q = (text: string, values: unknown[] = []): Promise<unknown> => t.pool.query(text, [org, ...values]);
  const now = new Date();
  // results, courses, users, groups, filters, seats
  await q(`insert into training.courses (org, course_id, name, pass_rate, first_seen_at, last_seen_at, updated_at) values ($1, $2, 'Safety', 80, $3, $3, $3)`, [COURSE, now]);
  await q(`insert into training.course_categories (org, course_id, category_type, category_name) values ($1, $2, 'topic', 'safety')`, [COURSE]);
  await q(`insert into training.users (org, user_id, email, has_access, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, true, $4, $4, $4)`, [USER, `u@${org}.example`, now]);
  await q(
    `insert into training.results (org, result_id, user_id, course_id, is_complete, date_completed, score, maximum_score, first_seen_at, last_seen_at, updated_at)
     values ($1, $2, $3, $4, true, $5, 8, 10, $5, $5, $5)`,
    [RESULT, USER, COURSE, now],
  );
  await q(`insert into training.reporting_filters (org, filter_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, 'Site', $3, $3, $3)`, [FILTER, now]);
  await q(`insert into training.reporting_filter_answers (org, answer_id, filter_id, answer, first_seen_at, last_seen_at, updated_at) values ($1, $2, $3, 'North', $4, $4, $4)`, [ANSWER, FILTER, now]);
  await q(`insert into training.result_filter_answers (org, result_id, answer_id) values ($1, $2, $3)`, [RESULT, ANSWER]);
  await q(`insert into training.groups (org, group_id, name, first_seen_at, last_seen_at, updated_at) values ($1, $2, 'Drivers', $3, $3, $3)`, [GROUP, now]);
  await q(`insert into training.group_courses (org, group_id, course_id) values ($1, $2, $3)`, [GROUP, COURSE]);
  await q(`insert into training.group_members (org, group_id, user_id, employee_id, since) values ($1, $2, $3, 'E1', $4)`, [GROUP, USER, now]);
  await q(`insert into training.seat_usage (org, observed_at) values ($1, $2)`, [now]);
  // employees, provisioning actions, held plans, audit, feeds, identities
  await q(`insert into training.employees (org, employee_id, email, status, first_seen_at, last_seen_at, updated_at) values ($1, 'E1', $2, 'inactive', $3, $3, $3)`, [`u@${org}.example`, now]);
  await q(`insert into training.employee_history (org, employee_id, valid_from, status, email) values ($1, 'E1', $2, 'inactive', $3)`, [now, `u@${org}.example`]);
  await q(`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, status, error_code, error_message, finished_at) values ($1, 'act-1', 'E1', $2, 'disable', 'failed', 'X', 'boom', now())`, [`u@${org}.example`]);
  await q(`insert into trainsync.identities (org, employee_id, email, active, platform_user_id) values ($1, 'E1', $2, false, $3)`, [`u@${org}.example`, USER]);
  await q(`insert into trainsync.feeds (org, hash, path, format, mode, rows, errors) values ($1, $2, 'feed.csv', 'csv', 'full', 1, 0)`, [HASH]);
  await q(
    `insert into trainsync.held_plans (org, source, file, mode, reason, message, actions, people, disables, feed, feed_hash)
     values ($1, 'feed', 'feed.csv', 'full', 'disable-limit', 'held', '[]', '[]', 1, '{}', $2)`,
    [HASH],
  );
  await q(`insert into trainsync.console_audit (org, username, role, action, target) values ($1, 'ops', 'operator', 'retry-action', 'act-1')`);
  // SCIM
  await q(`insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource) values ($1, $2, 'E1', $3, true, '{}')`, [randomUUID(), `u@${org}.example`]);
  await q(`insert into trainsync.scim_groups (org, group_id, display_name) values ($1, $2, 'Drivers')`, [GROUP]);
  // webhooks
  await q(`insert into trainsync.webhook_events (org, event_id, event_type, payload) values ($1, 'ev-1', 'RESULT_COMPLETED', '{}')`);
  await q(`insert into trainsync.webhook_event_results (org, event_id, result_id, received_at) values ($1, 'ev-1', $2, now())`, [RESULT]);
  await q(`insert into trainsync.webhook_refusals (org, reason, header) values ($1, 'invalid', 'x-signature')`);
  await q(`insert into trainsync.webhook_refusal_counts (org, minute, reason, refusals, header) values ($1, date_trunc('minute', now()), 'invalid', 3, 'x-signature')`);
  // runs, checkpoints, watermarks, windows, quarantine, sightings
  const run = (await t.pool.query<{ id: number }>(`insert into trainsync.runs (org, resource, status) values ($1, 'results', 'succeeded') returning id`, [org])).rows[0]!.id;
  await q(`insert into trainsync.checkpoints (org, key, value, run_id) values ($1, 'results:w1', '{}', $2)`, [run]);
  await q(`insert into trainsync.watermarks (org, resource, value) values ($1, 'results', '2026-01-01')`);
  await q(`insert into trainsync.sync_schedules (org, resource, pattern, every_seconds) values ($1, 'results', '0 2 * * *', 86400)`);
  await q(`insert into trainsync.unfinished_windows (org, resource, window_key, reason, run_id) values ($1, 'results', 'w1', 'timeout', $2)`, [run]);
  await q(`insert into trainsync.quarantine (org, resource, raw, message, run_id) values ($1, 'results', '{}', 'bad', $2)`, [run]);
  await q(`insert into trainsync.result_sightings (org, run_id, result_id) values ($1, $2, $3)`, [run, RESULT]);
}

/** Every table with an org column (the console's sessions aside: their org is a selector's choice, read by token). */
async function orgTables(): Promise<string[]> {
  const { rows } = await t.pool.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     join pg_attribute a on a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped
     where n.nspname in ('training', 'trainsync') and c.relkind in ('r', 'p') and c.relname <> 'console_sessions'
     order by 1`,
  );
  return rows.map((r) => r.name);
}

async function orgViews(): Promise<string[]> {
  const { rows } = await t.pool.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     join pg_attribute a on a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped
     where n.nspname in ('training', 'trainsync') and c.relkind in ('v', 'm')
     order by 1`,
  );
  return rows.map((r) => r.name);
}

/** Rows of each organisation in `table`, as the owner sees them. */
async function ownerCounts(table: string): Promise<Record<string, number>> {
  const { rows } = await t.pool.query<{ org: string; n: number }>(`select org, count(*)::int as n from ${table} group by org`);
  return Object.fromEntries(rows.map((r) => [r.org, r.n]));
}

/** Rolled back whatever `fn` did: the probes change nothing for the next. */
class Rollback extends Error {}
async function rolledBack(org: string, fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  await scopes
    .scope(org)
    .transaction(async ({ client }) => {
      await fn(client);
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
}

/**
 * Never run: `npm run build` type-checks it. Each line is a pairing the handle's types refuse
 * (tsc fails when an `@ts-expect-error` line compiles): a slug for a handle, a hand-built
 * `{ org, db }` (no brand), a handle of several organisations (no one organisation to name).
 */
function typeChecks(): void {
  const a = scopes.scope('a');
  // @ts-expect-error a slug is not a handle
  void findIdentity('a', 'E1');
  // @ts-expect-error a hand-built { org, db } has not the brand only createScopes gives
  void findIdentity({ org: 'b', db: a.db }, 'E1');
  // @ts-expect-error a handle of several organisations names no one organisation
  void findIdentity(scopes.scope(['a', 'b']), 'E1');
  // @ts-expect-error the escape across organisations names none either
  void scopes.acrossOrganisations('type check', (all) => findIdentity(all, 'E1'));
}

beforeAll(async () => {
  t = await createTestDatabase();
  for (const org of ORGS) await t.pool.query(`insert into training.organisations (slug, name) values ($1, $1) on conflict do nothing`, [org]);
  for (const org of ORGS) await seed(org);
  appPool = createPool(t.url, { max: 3, role: APP_ROLE, applicationName: 'trainsync-test-app' });
  const sink = new Writable({ write: (chunk: Buffer, _encoding, callback) => (logged.push(chunk.toString()), callback()) });
  scopes = createScopes(appPool, createLogger('info', sink));
});

afterAll(async () => {
  await appPool?.end();
  await t?.drop();
});

describe('organisation isolation enforced by Postgres', () => {
  it('seeds every table family for every organisation (the probes below are not vacuous)', async () => {
    for (const table of await orgTables()) {
      const counts = await ownerCounts(table);
      for (const org of ORGS) expect(counts[org] ?? 0, `${table} ${org}`).toBeGreaterThan(0);
    }
  });

  it("reads with no org filter see only a's rows, in every table", async () => {
    const a = scopes.scope('a');
    for (const table of await orgTables()) {
      const { rows } = await a.lend((client) => client.query<{ org: string; n: number }>(`select org, count(*)::int as n from ${table} group by org`));
      const owner = await ownerCounts(table);
      expect(rows, table).toEqual([{ org: 'a', n: owner.a }]);
      // The typed handle too: Kysely on the scoped connection.
      const { n } = await a.db.selectFrom(sql.table(table).as('t')).select(sql<number>`count(*)::int`.as('n')).where(sql.ref('org'), '<>', 'a').executeTakeFirstOrThrow();
      expect(n, table).toBe(0);
    }
  });

  it("reads of every view see only a's rows", async () => {
    const views = await orgViews();
    expect(views).toContain('training.hr_reconciliation');
    for (const view of views) {
      const { rows } = await scopes.scope('a').lend((client) => client.query<{ n: number }>(`select count(*)::int as n from ${view} where org <> 'a'`));
      expect(rows[0]!.n, view).toBe(0);
    }
    // Not vacuous: b's rows are there for the owner, and a sees its own through the views.
    for (const view of ['training.result_details', 'training.course_completion', 'training.hr_reconciliation', 'trainsync.provisioning_audit']) {
      const owner = await t.pool.query<{ org: string }>(`select distinct org from ${view} order by org`);
      expect(owner.rows.map((r) => r.org), view).toEqual([...ORGS]);
      const seen = await scopes.scope('a').lend((client) => client.query<{ org: string }>(`select distinct org from ${view}`));
      expect(seen.rows, view).toEqual([{ org: 'a' }]);
    }
  });

  it("updates and deletes with no org filter touch only a's rows", async () => {
    for (const table of await orgTables()) {
      const before = await ownerCounts(table);
      await rolledBack('a', async (client) => {
        const updated = await client.query(`update ${table} set org = org`);
        expect(updated.rowCount, `update ${table}`).toBe(before.a);
        const deleted = await client.query(`delete from ${table}`);
        expect(deleted.rowCount, `delete ${table}`).toBe(before.a);
      });
      expect(await ownerCounts(table), table).toEqual(before);
    }
    // Committed this time: a's scope empties a table; b's and c's rows stay.
    await sql`delete from trainsync.webhook_refusals`.execute(scopes.scope('a').db);
    expect(await ownerCounts('trainsync.webhook_refusals')).toEqual({ b: 1, c: 1 });
  });

  it("a row of another organisation cannot be written: inserts and updates naming b are refused (WITH CHECK)", async () => {
    for (const table of await orgTables()) {
      const before = await ownerCounts(table);
      if ((before.a ?? 0) === 0) continue;
      // A copy of one of a's rows, as b's.
      const insert = rolledBack('a', async (client) => {
        await client.query(`insert into ${table} select (jsonb_populate_record(null::${table}, to_jsonb(r) || '{"org": "b"}')).* from ${table} r limit 1`);
      });
      await expect(insert, `insert into ${table}`).rejects.toMatchObject({ code: '42501' });
      const move = rolledBack('a', async (client) => {
        await client.query(`update ${table} set org = 'b'`);
      });
      await expect(move, `update ${table}`).rejects.toMatchObject({ code: '42501' });
      expect(await ownerCounts(table), table).toEqual(before);
    }
  });

  it('outside any scope trainsync sees no organisation rows; several and all are named on purpose', async () => {
    for (const table of await orgTables()) {
      const { rows } = await scopes.unscoped.selectFrom(sql.table(table).as('t')).select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow().then((r) => ({ rows: [r] }));
      expect(rows[0]!.n, table).toBe(0);
    }
    const two = await scopes.scope(['a', 'c']).db.selectFrom('training.results').select('org').orderBy('org').execute();
    expect(two.map((r) => r.org)).toEqual(['a', 'c']);
    const all = await scopes.acrossOrganisations('the isolation test reads every organisation', (handle) => handle.db.selectFrom('training.results').select('org').orderBy('org').execute());
    expect(all.map((r) => r.org)).toEqual([...ORGS]);
    expect(logged.join('')).toContain('the isolation test reads every organisation');
    // The scope is transaction-local: the pooled connection carries nothing into the next unit of work.
    const after = await scopes.unscoped.selectFrom('training.results').select('org').execute();
    expect(after).toEqual([]);
  });

  it("a store reads the organisation from the handle it is given: a's handle, and its transaction, reach a's rows only", async () => {
    const a = scopes.scope('a');
    expect(scopes.scope('a')).toBe(a);
    expect(a.org).toBe('a');
    expect(await a.transaction(async (tx) => tx.org)).toBe('a');
    expect(await a.retriedTransaction(async (tx) => tx.org)).toBe('a');
    // The same employee id in every organisation: what comes back is the handle's organisation's.
    expect((await findIdentity(a, 'E1'))?.org).toBe('a');
    expect((await a.transaction((tx) => findIdentity(tx, 'E1')))?.org).toBe('a');
    expect((await findIdentity(scopes.scope('c'), 'E1'))?.email).toBe('u@c.example');
    expect(typeChecks).toBeTypeOf('function');
  });

  it('trainsync_app owns nothing and is not exempt from row security', async () => {
    const { rows } = await t.pool.query<{ owned: number; bypass: boolean }>(
      `select (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname in ('training', 'trainsync') and pg_get_userbyid(c.relowner) = $1) as owned,
              (select rolbypassrls or rolsuper from pg_roles where rolname = $1) as bypass`,
      [APP_ROLE],
    );
    expect(rows[0]).toEqual({ owned: 0, bypass: false });
    const { rows: who } = await appPool.query<{ current_user: string }>('select current_user');
    expect(who[0]!.current_user).toBe(APP_ROLE);
  });

  it('a login that cannot take trainsync_app is refused with the GRANT to run (exit 2); so is a connection that is not the role', async () => {
    const login = `lg${randomBytes(4).toString('hex')}`;
    await withAdmin((admin) => admin.query(`create role ${admin.escapeIdentifier(login)} login`));
    try {
      const url = new URL(t.url);
      url.username = login;
      const pool = createPool(url.toString(), { max: 1, role: APP_ROLE });
      const refused = await checkAppRole(pool, url.toString()).then(() => undefined, (error: unknown) => error);
      await pool.end();
      expect(refused).toBeInstanceOf(AppRoleError);
      expect((refused as Error).message).toContain(`GRANT ${APP_ROLE} TO ${login}`);
      expect(exitCodeFor(refused)).toBe(2);
      // A connection that did not take the role when it opened (a transaction-mode pooler hands
      // each transaction to any server connection): a scoped transaction takes it itself.
      const ownerPool = createPool(t.url, { max: 1 });
      const viaPooler = createScopes(ownerPool, createLogger('error', new Writable({ write: (_chunk, _encoding, callback) => callback() })));
      const seen = await viaPooler.scope('a').db.selectNoFrom(sql<string>`current_user`.as('role')).executeTakeFirstOrThrow();
      const orgs = await viaPooler.scope('a').db.selectFrom('training.courses').select('org').distinct().execute();
      await ownerPool.end();
      expect(seen.role).toBe(APP_ROLE);
      expect(orgs.map((r) => r.org)).toEqual(['a']);
    } finally {
      await withAdmin((admin) => admin.query(`drop role if exists ${admin.escapeIdentifier(login)}`));
    }
  });
});
