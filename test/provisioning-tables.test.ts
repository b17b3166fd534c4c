import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAppliedEmployees } from '../src/provisioning/apply/applied-state.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

const G1 = '6f9619ff-8b86-d011-b42d-00c04fc964ff';
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});

describe('0003_provisioning migration', () => {
  it('stores identities, keeps e-mails unique regardless of case, and feeds the planner', async () => {
    await t.db
      .insertInto('trainsync.identities')
      .values([
        { org: 'default', employee_id: 'E1', email: 'Ann@Example.com', platform_user_id: G1, first_name: 'Ann', last_name: 'A', role: 'USER', organisation_identifier: 'E1', active: true, groups: [G1] },
        { org: 'default', employee_id: 'E2', email: 'bob@example.com', platform_user_id: null, first_name: 'Bob', last_name: 'B', role: null, organisation_identifier: null, active: true },
      ])
      .execute();
    await expect(
      t.db.insertInto('trainsync.identities').values({ org: 'default', employee_id: 'E3', email: 'ANN@example.com', platform_user_id: null, first_name: null, last_name: null, role: null, organisation_identifier: null, active: true }).execute(),
    ).rejects.toThrow(/identities_email_key/);

    const applied = await loadAppliedEmployees(t.scope());
    expect(applied).toEqual([
      { employeeId: 'E1', email: 'Ann@Example.com', platformUserId: G1, firstName: 'Ann', lastName: 'A', active: true, groups: [G1], role: 'USER', organisationIdentifier: 'E1', version: 1 },
      { employeeId: 'E2', email: 'bob@example.com', platformUserId: null, firstName: 'Bob', lastName: 'B', active: true, groups: [], role: null, organisationIdentifier: null, version: 1 },
    ]);
    const plan = planProvisioning({ rows: [], invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied, mode: 'full', options: { force: false } });
    expect(plan.actions.map((a) => a.id)).toEqual(['disable:E1:v1', 'disable:E2:v1']);
  });

  it('records actions once per deterministic id and shows them in the audit view with their feed', async () => {
    const hash = 'a'.repeat(64);
    await t.db.insertInto('trainsync.feeds').values({ org: 'default', hash, path: '/data/hr.csv', format: 'csv', mode: 'full', rows: 2, errors: 0, refused: null }).execute();
    const action = { org: 'default', action_id: 'disable:E1:v1', employee_id: 'E1', email: 'ann@example.com', kind: 'disable' as const, group_id: null, before: JSON.stringify({ active: true }), after: JSON.stringify({ active: false }), error_code: null, error_message: null, feed_hash: hash };
    await t.db.insertInto('trainsync.provisioning_actions').values(action).execute();
    await expect(t.db.insertInto('trainsync.provisioning_actions').values(action).execute()).rejects.toThrow(/provisioning_actions_action_id_key/);
    await expect(
      t.db.insertInto('trainsync.provisioning_actions').values({ ...action, action_id: 'x', status: 'done' as never }).execute(),
    ).rejects.toThrow(/provisioning_actions_status_check/);

    const audit = await t.db.selectFrom('trainsync.provisioning_audit').selectAll().execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      action_id: 'disable:E1:v1',
      status: 'planned',
      attempts: 0,
      before: { active: true },
      after: { active: false },
      feed_path: '/data/hr.csv',
      feed_mode: 'full',
      platform_user_id: G1,
      currently_active: true,
    });
    const { rows } = await sql<{ schema: string }>`select table_schema as schema from information_schema.views where table_name = 'provisioning_audit'`.execute(t.db);
    expect(rows).toEqual([{ schema: 'trainsync' }]);
  });
});
