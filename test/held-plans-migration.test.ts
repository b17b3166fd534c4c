import { cp, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHeldPlan } from '../src/provisioning/held-plans.ts';
import { createLogger } from '../src/runtime/log.ts';
import { migrate, SQL_DIR } from '../src/warehouse/migrator.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * 0018 on a warehouse that has data: the deactivations the SCIM guard held
 * (trainsync.scim_held_actions) become held plans, one open plan per organisation, the
 * decided ones history; feeds' held plans stay feeds'; the audit trail learns its sources.
 */

const log = createLogger('error');
const SCIM = [0, 1, 2, 3].map((i) => `33333333-3333-4333-8333-33333333333${i}`);
const G1 = '11111111-1111-4111-8111-111111111111';
const HASH = 'c'.repeat(64);

let database: TestDatabase;
let dir: string;

beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
  dir = await mkdtemp(path.join(tmpdir(), 'trainsync-pre-0018-'));
  await mkdir(path.join(dir, 'migrations'), { recursive: true });
  // No views: the ones of before 0018 are not kept anywhere, and the tables are what is moved.
  await mkdir(path.join(dir, 'views'), { recursive: true });
  for (const name of await readdir(path.join(SQL_DIR, 'migrations'))) {
    if (name < '0018') await cp(path.join(SQL_DIR, 'migrations', name), path.join(dir, 'migrations', name));
  }
});

afterAll(async () => {
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('0018_one_hold on a warehouse with held SCIM deactivations', () => {
  it('moves them into held plans, per organisation, and keeps the decided ones as history', async () => {
    const old = await migrate(database.pool, log, { sqlDir: dir });
    expect(old.applied.at(-1)).toBe('0017_org_webhooks_console.sql');
    const q = (text: string, values: unknown[] = []) => database.pool.query(text, values);
    await q(`insert into training.organisations (slug, name) values ('north', 'North')`);
    await q(`insert into trainsync.identities (org, employee_id, email, platform_user_id, active, version) values ('default', 'E1', 'ann@example.com', $1, true, 3), ('default', 'E2', 'bob@example.com', null, true, 1), ('north', 'N1', 'nia@example.com', null, true, 2)`, [G1]);
    await q(`insert into training.employees (org, employee_id, email, status, attributes, first_seen_at, last_seen_at, updated_at) values ('default', 'E1', 'ann@example.com', 'inactive', '{"department": "Sales"}', now(), now(), now())`);
    const held = `insert into trainsync.scim_held_actions (org, employee_id, scim_id, email, kind, reason, status, decided_at) values ($1, $2, $3, $4, 'disable', $5, $6, $7)`;
    await q(held, ['default', 'E1', SCIM[0], 'Ann@Example.com', '7 deactivations via SCIM within 1 hour, over the limit of 5', 'held', null]);
    await q(held, ['default', 'E2', SCIM[1], 'bob@example.com', '8 deactivations via SCIM within 1 hour, over the limit of 5', 'held', null]);
    await q(held, ['north', 'N1', SCIM[2], 'nia@example.com', '2 deactivations via SCIM within 1 hour, over the limit of 1', 'held', null]);
    await q(held, ['default', 'E3', SCIM[3], 'cy@example.com', 'burst', 'released', '2026-01-02T03:04:05Z']);
    await q(`insert into trainsync.held_plans (org, feed_hash, file, mode, reason, message, actions, people, disables, feed)
             values ('default', $1, 'hr.csv', 'full', 'max-disable', 'too many', '[]', '[]', 9, '{"rows":[],"keepEmployeeIds":[],"keepEmails":[]}')`, [HASH]);
    const audit = `insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, feed_hash) values ('default', $1, 'E1', 'ann@example.com', $2, $3)`;
    await q(audit, ['disable:E1:v1', 'disable', 'via SCIM']);
    await q(audit, ['enable:E1:v2', 'enable', HASH]);
    await q(audit, ['disable:E1:v3', 'disable', null]);
    await q(audit, ['set-password:ann@example.com:x', 'set-password', null]);

    const head = await migrate(database.pool, log);
    expect(head.applied[0]).toBe('0018_one_hold.sql');
    expect((await q(`select to_regclass('trainsync.scim_held_actions') as t`)).rows).toEqual([{ t: null }]);

    const plans = await q(`select id, org, source, file, status, disables, rows_read, active_employees from trainsync.held_plans order by id`);
    expect(plans.rows.map(({ id: _id, ...rest }) => rest)).toEqual([
      { org: 'default', source: 'feed', file: 'hr.csv', status: 'held', disables: 9, rows_read: null, active_employees: null },
      { org: 'default', source: 'scim', file: 'SCIM', status: 'held', disables: 2, rows_read: 2, active_employees: 2 },
      { org: 'north', source: 'scim', file: 'SCIM', status: 'held', disables: 1, rows_read: 1, active_employees: 1 },
      { org: 'default', source: 'scim', file: 'SCIM', status: 'approved', disables: 1, rows_read: 1, active_employees: null },
    ]);
    // The open burst reads back as a held plan: each person's disable as it would have been planned, the newest reason on top.
    const burst = await getHeldPlan(database.db, plans.rows[1].id as number);
    expect(burst!.message).toBe('8 deactivations via SCIM within 1 hour, over the limit of 5');
    expect(burst!.people).toEqual([
      { employeeId: 'E1', email: 'ann@example.com', kinds: ['disable'], ref: SCIM[0], department: 'Sales' },
      { employeeId: 'E2', email: 'bob@example.com', kinds: ['disable'], ref: SCIM[1], department: null },
    ]);
    expect(burst!.actions.map((a) => [a.id, a.platformUserId, a.baseVersion])).toEqual([['disable:E1:v3', G1, 3], ['disable:E2:v1', null, 1]]);
    expect(burst!.feedHash).toBeNull();
    const history = await getHeldPlan(database.db, plans.rows[3].id as number);
    expect(history).toMatchObject({ status: 'approved', decidedRole: 'cli', decidedAt: new Date('2026-01-02T03:04:05Z') });

    // One open SCIM plan per organisation.
    await expect(q(`insert into trainsync.held_plans (org, source, file, mode, reason, message, actions, people, disables, feed) values ('north', 'scim', 'SCIM', 'delta', 'max-disable', 'x', '[]', '[]', 0, '{}')`)).rejects.toThrow(/held_plans_open_scim_key/);

    const sources = await q(`select action_id, source from trainsync.provisioning_actions order by id`);
    expect(sources.rows).toEqual([
      { action_id: 'disable:E1:v1', source: 'scim' },
      { action_id: 'enable:E1:v2', source: 'feed' },
      { action_id: 'disable:E1:v3', source: 'reconcile' },
      { action_id: 'set-password:ann@example.com:x', source: null },
    ]);
    const view = await q(`select action_id, source, reason from trainsync.provisioning_audit where action_id = 'enable:E1:v2'`);
    expect(view.rows).toEqual([{ action_id: 'enable:E1:v2', source: 'feed', reason: null }]);
  });
});
