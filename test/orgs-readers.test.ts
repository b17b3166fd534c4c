import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, databaseUrl, withAdmin, type TestDatabase, asLogin as asLoginTo } from './helpers/db.ts';

/**
 * Per-organisation readers (issue 20): `trainsync migrate` creates a role per
 * organisation that asks for one, and row-level security shows it only that
 * organisation's rows, in tables and views alike; trainsync_reader still sees all.
 */
const tag = randomBytes(3).toString('hex');
const northReader = `r${tag}_north`;
const southReader = `r${tag}_south`;
const northLogin = `bi${tag}_north`;
const allLogin = `bi${tag}_all`;
const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-readers-'));
let t: TestDatabase;
let env: Record<string, string>;

const asLogin = <T>(login: string, fn: (client: pg.Client, notices: string[]) => Promise<T>): Promise<T> => asLoginTo(t.name, login, fn);

beforeAll(async () => {
  t = await createTestDatabase();
  const file = path.join(dir, 'orgs.json');
  writeFileSync(
    file,
    JSON.stringify({
      organisations: [
        { slug: 'north', name: 'North', apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'NORTH_KEY' }, reader: northReader },
        { slug: 'south', name: 'South', apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'SOUTH_KEY' }, reader: southReader },
      ],
    }),
  );
  env = { DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl, TRAINSYNC_ORGS_FILE: file, NORTH_KEY: 'kn', SOUTH_KEY: 'ks' };
});

afterAll(async () => {
  await t?.drop();
  // Roles are cluster-wide: dropped once the database holding their grants is gone.
  await withAdmin(async (admin) => {
    for (const role of [northLogin, allLogin, northReader, southReader]) await admin.query(`drop role if exists ${admin.escapeIdentifier(role)}`);
  });
  rmSync(dir, { recursive: true, force: true });
});

describe('per-organisation readers', () => {
  it('migrate creates one reader per organisation, and a second migrate changes nothing', async () => {
    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`reader ${northReader}: sees only north (created)`);
    expect(first.stdout).toContain(`reader ${southReader}: sees only south (created)`);
    const again = await runCli(['migrate'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`reader ${northReader}: sees only north\n`);
    const { rows } = await t.pool.query<{ slug: string; reader_role: string | null }>('select slug, reader_role from training.organisations order by slug');
    // `default` is the single-organisation variables' organisation: an orgs file without it has no `default` row.
    expect(rows).toEqual([
      { slug: 'north', reader_role: northReader },
      { slug: 'south', reader_role: southReader },
    ]);
  });

  it("a reader sees only its organisation's rows, in tables and views, and SET ROLE cannot widen it", async () => {
    const course = '11111111-1111-4111-8111-111111111111';
    const now = new Date();
    for (const [org, passRate, result] of [
      ['north', 70, '22222222-2222-4222-8222-222222222222'],
      ['south', 90, '33333333-3333-4333-8333-333333333333'],
    ] as const) {
      await t.pool.query(`insert into training.courses (org, course_id, name, pass_rate, first_seen_at, last_seen_at, updated_at) values ($1, $2, 'Safety', $3, $4, $4, $4)`, [org, course, passRate, now]);
      await t.pool.query(
        `insert into training.results (org, result_id, user_id, course_id, is_complete, date_completed, score, maximum_score, first_seen_at, last_seen_at, updated_at)
         values ($1, $2, '44444444-4444-4444-8444-444444444444', $3, true, $4, 8, 10, $4, $4, $4)`,
        [org, result, course, now],
      );
    }
    await withAdmin(async (admin) => {
      await admin.query(`create role ${admin.escapeIdentifier(northLogin)} login in role ${admin.escapeIdentifier(northReader)}`);
      await admin.query(`create role ${admin.escapeIdentifier(allLogin)} login in role trainsync_reader`);
    });

    await asLogin(northLogin, async (client) => {
      expect((await client.query('select org, pass_rate from training.courses')).rows).toEqual([{ org: 'north', pass_rate: 70 }]);
      expect((await client.query('select org from training.results')).rows).toEqual([{ org: 'north' }]);
      expect((await client.query('select org from training.result_details')).rows).toEqual([{ org: 'north' }]);
      expect((await client.query('select slug from training.organisations')).rows).toEqual([{ slug: 'north' }]);
      await expect(client.query('set role trainsync_reader')).rejects.toThrow(/permission denied/);
      await expect(client.query(`set role ${southReader}`)).rejects.toThrow(/permission denied/);
      await expect(client.query('select count(*) from trainsync.runs')).rejects.toThrow(/permission denied/);
      await expect(client.query(`update training.courses set pass_rate = 1`)).rejects.toThrow(/permission denied/);
    });

    await asLogin(allLogin, async (client) => {
      expect((await client.query('select org from training.courses order by org')).rows).toEqual([{ org: 'north' }, { org: 'south' }]);
      expect((await client.query('select count(*)::int as n from training.result_details')).rows).toEqual([{ n: 2 }]);
    });
  });

  it('readers have nothing in schema trainsync; the reconciliation view still shows a reader its organisation\'s pending actions', async () => {
    for (const org of ['north', 'south']) {
      await t.pool.query(
        `insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, status, error_code, error_message, finished_at)
         values ($1, $2, 'E1', $3, 'create-user', 'failed', 'X', 'boom', now())`,
        [org, `${org}-a1`, `e1@${org}.example`],
      );
    }
    const privileges = await t.pool.query<{ role: string; usage: boolean; tables: number; columns: number }>(
      `select r.role,
         has_schema_privilege(r.role, 'trainsync', 'USAGE') as usage,
         (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'trainsync' and c.relkind in ('r', 'v', 'p')
             and (has_table_privilege(r.role, c.oid, 'SELECT') or has_table_privilege(r.role, c.oid, 'INSERT') or has_table_privilege(r.role, c.oid, 'UPDATE') or has_table_privilege(r.role, c.oid, 'DELETE'))) as tables,
         (select count(*)::int from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'trainsync' and c.relkind in ('r', 'v', 'p') and a.attnum > 0 and not a.attisdropped
             and has_column_privilege(r.role, c.oid, a.attnum, 'SELECT')) as columns
       from unnest($1::text[]) as r(role)`,
      [[northReader, southReader, 'trainsync_reader', northLogin, allLogin]],
    );
    for (const row of privileges.rows) expect(row, row.role).toMatchObject({ usage: false, tables: 0, columns: 0 });
    await asLogin(northLogin, async (client) => {
      await expect(client.query('select email from trainsync.provisioning_actions')).rejects.toThrow(/permission denied/);
      const pending = await client.query(`select org, email from training.hr_reconciliation where kind = 'pending_action'`);
      expect(pending.rows).toEqual([{ org: 'north', email: 'e1@north.example' }]);
    });
    await asLogin(allLogin, async (client) => {
      const pending = await client.query(`select org from training.hr_reconciliation where kind = 'pending_action' order by org`);
      expect(pending.rows).toEqual([{ org: 'north' }, { org: 'south' }]);
    });
  });

  it('refuses a reader role that is a member of trainsync_reader (it would see everything)', async () => {
    await withAdmin((admin) => admin.query(`grant trainsync_reader to ${admin.escapeIdentifier(southReader)}`));
    try {
      const refused = await runCli(['migrate'], env);
      // A configuration to fix, refused before anything is changed: exit 2.
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`REVOKE trainsync_reader FROM ${southReader}`);
    } finally {
      await withAdmin((admin) => admin.query(`revoke trainsync_reader from ${admin.escapeIdentifier(southReader)}`));
    }
  });
});
