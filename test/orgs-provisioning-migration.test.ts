import { cp, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { migrate, SQL_DIR } from '../src/warehouse/migrator.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * A warehouse made before organisations (migrations up to 0014) with provisioning, employee
 * and SCIM rows: 0016 gives every row to `default`, loses none, and keys them by org first,
 * so another organisation can then hold the same employee id, e-mail and platform user.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const log = createLogger('error');
const G1 = '11111111-1111-4111-8111-111111111111';
const GROUP = '22222222-2222-4222-8222-222222222222';
const SCIM_ID = '33333333-3333-4333-8333-333333333333';
const HASH = 'b'.repeat(64);
const TABLES = [
  'trainsync.identities',
  'trainsync.feeds',
  'trainsync.provisioning_actions',
  'training.employees',
  'training.employee_history',
  'trainsync.scim_users',
  'trainsync.scim_groups',
] as const;

let database: TestDatabase;
let dir: string;

beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
  dir = await mkdtemp(path.join(tmpdir(), 'trainsync-pre-orgs-'));
  await mkdir(path.join(dir, 'migrations'), { recursive: true });
  // The previous version's views (a view on a key blocks changing that key).
  await cp(path.join(HERE, 'fixtures', 'pre-orgs-views'), path.join(dir, 'views'), { recursive: true });
  for (const name of await readdir(path.join(SQL_DIR, 'migrations'))) {
    if (name <= '0014_organisations.sql') await cp(path.join(SQL_DIR, 'migrations', name), path.join(dir, 'migrations', name));
  }
});

afterAll(async () => {
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('0016_org_provisioning on a single-organisation warehouse', () => {
  it("keeps every row as the default organisation's and keys them by org first", async () => {
    const old = await migrate(database.pool, log, { sqlDir: dir });
    expect(old.applied.at(-1)).toBe('0014_organisations.sql');
    const q = (text: string, values: unknown[] = []) => database.pool.query(text, values);
    await q(`insert into trainsync.identities (employee_id, email, platform_user_id, first_name, last_name, role, organisation_identifier, active, groups)
             values ('E1', 'ann@example.com', $1, 'Ann', 'A', 'USER', 'E1', true, $2)`, [G1, [GROUP]]);
    await q(`insert into trainsync.feeds (hash, path, format, mode, rows, errors) values ($1, '/data/hr.csv', 'csv', 'full', 1, 0)`, [HASH]);
    await q(`insert into trainsync.provisioning_actions (action_id, employee_id, email, kind, status, feed_hash) values ('disable:E1:v1', 'E1', 'ann@example.com', 'disable', 'failed', $1)`, [HASH]);
    await q(`insert into trainsync.held_plans (feed_hash, file, mode, reason, message, actions, people, disables, feed)
             values ($1, 'hr.csv', 'full', 'max-disable', 'too many', '[]', '[]', 9, '{"rows":[],"keepEmployeeIds":[],"keepEmails":[]}')`, [HASH]);
    await q(`insert into training.employees (employee_id, email, status, user_id, first_seen_at, last_seen_at, updated_at) values ('E1', 'ann@example.com', 'active', $1, now(), now(), now())`, [G1]);
    await q(`insert into training.employee_history (employee_id, valid_from, status, email) values ('E1', now(), 'active', 'ann@example.com')`);
    await q(`insert into trainsync.scim_users (scim_id, employee_id, user_name, active, resource) values ($1, 'E1', 'ann@example.com', true, '{}')`, [SCIM_ID]);
    await q(`insert into trainsync.scim_groups (group_id, display_name) values ($1, 'Sales')`, [GROUP]);
    await q(`insert into trainsync.scim_held_actions (employee_id, scim_id, email, kind, reason) values ('E1', $1, 'ann@example.com', 'disable', 'burst')`, [SCIM_ID]);

    const head = await migrate(database.pool, log);
    expect(head.applied).toContain('0016_org_provisioning.sql');
    for (const table of TABLES) {
      const { rows } = await q(`select org, count(*)::int as n from ${table} group by org`);
      expect(rows, table).toEqual([{ org: 'default', n: 1 }]);
    }
    // The held plan and the held SCIM deactivation are both default's held plans now (0018 moved the latter).
    const held = await q(`select org, source, disables from trainsync.held_plans order by id`);
    expect(held.rows).toEqual([{ org: 'default', source: 'feed', disables: 9 }, { org: 'default', source: 'scim', disables: 1 }]);
    // The views read them, with the organisation last.
    const audit = await q(`select org, feed_path, platform_user_id from trainsync.provisioning_audit`);
    expect(audit.rows).toEqual([{ org: 'default', feed_path: '/data/hr.csv', platform_user_id: G1 }]);
    const recon = await q(`select org, kind, employee_id from training.hr_reconciliation where kind = 'pending_action'`);
    expect(recon.rows).toEqual([{ org: 'default', kind: 'pending_action', employee_id: 'E1' }]);

    // Another organisation may now hold the same employee id, e-mail, platform user, action id and SCIM userName.
    await q(`insert into training.organisations (slug, name) values ('north', 'North')`);
    await q(`insert into trainsync.identities (org, employee_id, email, platform_user_id, active) values ('north', 'E1', 'ann@example.com', $1, true)`, [G1]);
    await q(`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind) values ('north', 'disable:E1:v1', 'E1', 'ann@example.com', 'disable')`);
    await q(`insert into training.employees (org, employee_id, email, status, first_seen_at, last_seen_at, updated_at) values ('north', 'E1', 'ann@example.com', 'active', now(), now(), now())`);
    await q(`insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource) values ('north', gen_random_uuid(), 'E1', 'ann@example.com', true, '{}')`);
    await q(`insert into trainsync.scim_groups (org, group_id, display_name) values ('north', $1, 'Sales')`, [GROUP]);
    // …but not twice within one organisation, nor for an organisation that is not configured.
    await expect(q(`insert into trainsync.identities (org, employee_id, email, active) values ('north', 'E2', 'ANN@example.com', true)`)).rejects.toThrow(/identities_email_key/);
    await expect(q(`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind) values ('north', 'disable:E1:v1', 'E1', 'a@x', 'disable')`)).rejects.toThrow(/provisioning_actions_action_id_key/);
    await expect(q(`insert into training.employees (org, employee_id, email, status, first_seen_at, last_seen_at, updated_at) values ('east', 'E1', 'a@x', 'active', now(), now(), now())`)).rejects.toThrow(/employees_org_fkey/);
  });
});
