import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconciliationReport } from '../src/provisioning/reconciliation.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * training.hr_reconciliation and `trainsync reconcile`: each kind produced by a
 * hand-built scenario, shown by the CLI, and then cleared by fixing its cause.
 */

let t: TestDatabase;

const U = (n: number): string => `00000000-0000-4000-8000-${String(500 + n).padStart(12, '0')}`;
const T0 = '2024-01-01T00:00:00Z';

async function q(text: string, values: unknown[] = []): Promise<void> {
  await t.pool.query(text, values);
}

async function employee(employeeId: string, email: string, userId: string | null, options: { status?: string; removed?: boolean } = {}): Promise<void> {
  await q(
    `insert into training.employees (org, employee_id, email, first_name, last_name, status, attributes, user_id, first_seen_at, last_seen_at, removed_at, updated_at)
     values ('default', $1, $2, 'First', 'Last', $3, '{}'::jsonb, $4, $5, $5, $6, $5)`,
    [employeeId, email, options.status ?? 'active', userId, T0, options.removed ? '2024-06-01T00:00:00Z' : null],
  );
}

async function account(userId: string, email: string, hasAccess: boolean, options: { removed?: boolean; orgId?: string } = {}): Promise<void> {
  await q(
    `insert into training.users (org, user_id, email, first_name, last_name, role, organisation_identifier, has_access, first_seen_at, last_seen_at, updated_at, removed_at)
     values ('default', $1, $2, 'F', 'L', 'USER', $3, $4, $5, $5, $5, $6)`,
    [userId, email, options.orgId ?? null, hasAccess, T0, options.removed ? T0 : null],
  );
}

async function action(actionId: string, employeeId: string, kind: string, status: string, options: { groupId?: string; code?: string } = {}): Promise<void> {
  await q(
    `insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, group_id, status, error_code, error_message)
     values ('default', $1, $2, $3, $4, $5, $6, $7, $8)`,
    [actionId, employeeId, `${employeeId.toLowerCase()}@example.com`, kind, options.groupId ?? null, status, options.code ?? null, options.code ? `the platform said ${options.code}` : null],
  );
}

interface Row {
  kind: string;
  employee_id: string | null;
  email: string | null;
  user_id: string | null;
}

async function discrepancies(): Promise<Row[]> {
  const { rows } = await t.pool.query<Row>('select kind, employee_id, email, user_id::text from training.hr_reconciliation order by kind, email');
  return rows;
}

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

const env = (): Record<string, string> => ({ DATABASE_URL: t.url, TRAINSYNC_OWNER_DATABASE_URL: t.ownerUrl, LOG_LEVEL: 'warn' });

describe('training.hr_reconciliation', () => {
  it('reports no account without employee before any feed was loaded', async () => {
    await account(U(90), 'early@example.com', true);
    expect(await discrepancies()).toEqual([]);
  });

  it('produces each kind', async () => {
    // In step: nothing to report.
    await employee('A1', 'a1@example.com', U(1));
    await account(U(1), 'a1@example.com', true);
    await employee('A4', 'a4@example.com', null);
    await account(U(4), 'A4@Example.com', true); // found by e-mail, case aside
    await employee('L3', 'l3@example.com', U(13), { status: 'inactive' });
    await account(U(13), 'l3@example.com', false);
    // A re-hire under a new employee id holds the old employee's account: no leaver.
    await employee('L4', 'l4@example.com', U(14), { status: 'inactive' });
    await employee('A5', 'a5@example.com', U(14));
    await account(U(14), 'a5@example.com', true);
    await account(U(91), 'someone@example.com', true, { orgId: 'A1' }); // listed through its organisation identifier
    await account(U(92), 'gone@example.com', false); // no access: not an account "with access"
    await q('delete from training.users where user_id = $1', [U(90)]);

    // active_without_account: none at all, and one the platform no longer lists.
    await employee('A2', 'a2@example.com', null);
    await employee('A3', 'a3@example.com', U(3));
    await account(U(3), 'a3@example.com', true, { removed: true });
    // leaver_with_access: inactive, and no longer in the feed.
    await employee('L1', 'l1@example.com', U(11), { status: 'inactive' });
    await account(U(11), 'l1@example.com', true);
    await employee('L2', 'l2@example.com', U(12), { removed: true });
    await account(U(12), 'l2@example.com', true);
    // account_without_employee.
    await account(U(20), 'stranger@example.com', true);
    // pending_action: a failed enable, a needs-identity group add; a failed disable later done is not pending.
    await action('a-1', 'A2', 'enable', 'failed', { code: 'USER_NOT_FOUND' });
    await action('a-2', 'A3', 'add-to-group', 'needs-identity', { groupId: U(70), code: 'NEEDS_IDENTITY' });
    await action('a-3', 'L1', 'disable', 'failed', { code: 'HTTP_503' });
    await action('a-4', 'L1', 'disable', 'succeeded');

    expect(await discrepancies()).toEqual([
      { kind: 'account_without_employee', employee_id: null, email: 'stranger@example.com', user_id: U(20) },
      { kind: 'active_without_account', employee_id: 'A2', email: 'a2@example.com', user_id: null },
      { kind: 'active_without_account', employee_id: 'A3', email: 'a3@example.com', user_id: U(3) },
      { kind: 'leaver_with_access', employee_id: 'L1', email: 'l1@example.com', user_id: U(11) },
      { kind: 'leaver_with_access', employee_id: 'L2', email: 'l2@example.com', user_id: U(12) },
      { kind: 'pending_action', employee_id: 'A2', email: 'a2@example.com', user_id: null },
      { kind: 'pending_action', employee_id: 'A3', email: 'a3@example.com', user_id: null },
    ]);
    const details = await t.pool.query<{ detail: string }>("select detail from training.hr_reconciliation where kind = 'pending_action' order by employee_id");
    expect(details.rows.map((r) => r.detail)).toEqual([
      'enable: failed (USER_NOT_FOUND): the platform said USER_NOT_FOUND',
      `add-to-group ${U(70)}: needs-identity (NEEDS_IDENTITY): the platform said NEEDS_IDENTITY`,
    ]);
  });

  it('`reconcile` prints the counts per kind and examples; --json has them too; exit 0', async () => {
    const text = await runCli(['reconcile', '--examples', '1'], env());
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('7 discrepancies');
    for (const [kind, n] of [['active_without_account', 2], ['leaver_with_access', 2], ['account_without_employee', 1], ['pending_action', 2]] as const) {
      expect(text.stdout).toMatch(new RegExp(`${kind}[\\s│]+${n}\\s`));
    }
    expect(text.stdout).toContain('active_without_account (first 1 of 2):');
    expect(text.stdout).toContain('stranger@example.com');

    const json = await runCli(['reconcile', '--json'], env());
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { counts: Record<string, number>; total: number; examples: Record<string, unknown[]> };
    expect(report.counts).toEqual({ active_without_account: 2, leaver_with_access: 2, account_without_employee: 1, pending_action: 2 });
    expect(report.total).toBe(7);
    expect(report.examples.leaver_with_access).toHaveLength(2);
  });

  it('clears each kind once its cause is fixed', async () => {
    // A2 gets an account (and trainsync learns its id); A3's account is listed again.
    await account(U(2), 'a2@example.com', true);
    await q("update training.employees set user_id = $1 where employee_id = 'A2'", [U(2)]);
    await q('update training.users set removed_at = null where user_id = $1', [U(3)]);
    // The leavers lose access.
    await q('update training.users set has_access = false where user_id = any ($1::uuid[])', [[U(11), U(12)]]);
    // The stranger turns out to be an employee the feed now lists.
    await employee('A6', 'Stranger@example.com', null);
    // The failed enable is retried and succeeds (same action id); the group add gets a newer, successful action.
    await q("update trainsync.provisioning_actions set status = 'succeeded', error_code = null where action_id = 'a-1'");
    await action('a-5', 'A3', 'add-to-group', 'succeeded', { groupId: U(70) });

    expect(await discrepancies()).toEqual([]);
    const report = await reconciliationReport(t.scope());
    expect(report.total).toBe(0);
    const text = await runCli(['reconcile'], env());
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('0 discrepancies');
  });
});
