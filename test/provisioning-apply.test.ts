import { scopedApp } from '../src/commands/options/scoped.ts';
import { owner } from './helpers/owner.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisioningAttentionSection } from '../src/commands/status/provisioning-status.ts';
import { enqueuePlan, waitForActions } from '../src/provisioning/apply/enqueue.ts';
import { auditRows } from '../src/provisioning/apply/actions-store.ts';
import { provisionFeed, type ProvisionOptions, type ProvisionResult } from '../src/provisioning/provision-feed.ts';
import { provisionExitCode } from '../src/commands/render/provision-report.ts';
import { FOREIGN_EMAIL_DOMAIN, findUser, groupMembers, ORG_EMAIL_DOMAIN, writeCallCount } from '../src/simulator/index.ts';
import { accessSnapshot, feedDir, rowsFromState, toCsv, type HrRow } from './helpers/hr-feed.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';

let h: SyncHarness;
let files: ReturnType<typeof feedDir>;

beforeAll(async () => {
  h = await createSyncHarness({ simulator: { seed: 11, sizes: { users: 40, groups: 3, courses: 5, results: 20 } } });
  files = feedDir();
});
afterAll(async () => {
  await h?.close();
  files?.cleanup();
});

function run(rows: readonly HrRow[] | string, options: Partial<ProvisionOptions> = {}): Promise<ProvisionResult> {
  const file = typeof rows === 'string' ? rows : files.write(`feed-${Math.random().toString(36).slice(2)}.csv`, toCsv(rows));
  return provisionFeed(provisionDeps(h.app, 'default'), { file, mode: 'full', dryRun: false, force: false, ...options });
}

function joiner(id: string, groups: string[] = [], domain = ORG_EMAIL_DOMAIN): HrRow {
  return { employee_id: id, email: `${id.toLowerCase()}.joiner${domain}`, first_name: 'Jo', last_name: `Joiner ${id}`, status: 'active', groups, role: 'USER', organisation_identifier: id };
}

function user(email: string) {
  const found = findUser(h.sim.state, email);
  if (!found) throw new Error(`no user ${email} on the simulator`);
  return found;
}

const statusesOf = (result: ProvisionResult): string[] => [...new Set(result.applied?.audit.map((r) => r.status))];

describe('provisioning against the simulator', () => {
  it('first run: adopts existing accounts, creates joiners, disables a leaver, enables a returner, moves a mover', async () => {
    const state = h.sim.state;
    const rows = rowsFromState(state);
    const active = rows.filter((r) => r.status === 'active');
    const leaver = active[3]!;
    leaver.status = 'terminated';
    const returner = rows.find((r) => r.status === 'inactive')!;
    expect(returner).toBeDefined();
    returner.status = 'active';
    const mover = active[5]!;
    const into = state.groups.find((g) => !mover.groups.includes(g.id))!;
    mover.groups = [...mover.groups, into.id].sort();
    const j1 = joiner('J001', [state.groups[0]!.id, state.groups[2]!.id]);
    const j2 = joiner('J002');

    const result = await run([...rows, j1, j2]);
    expect(result.adopted).toBe(40);
    expect(result.plan.counts).toMatchObject({ 'create-user': 2, disable: 1, enable: 1, 'remove-from-group': 0 });
    expect(statusesOf(result)).toEqual(['succeeded']);
    expect(provisionExitCode(result)).toBe(0);

    const created = user(j1.email);
    expect(created).toMatchObject({ firstName: 'Jo', lastName: 'Joiner J001', organisationIdentifier: 'J001', hasAccess: true, role: 'USER' });
    expect(groupMembers(state, state.groups[0]!.id)).toContain(created.id);
    expect(groupMembers(state, state.groups[2]!.id)).toContain(created.id);
    expect(user(j2.email).hasAccess).toBe(true);
    expect(user(leaver.email).hasAccess).toBe(false);
    expect(user(returner.email).hasAccess).toBe(true);
    expect(groupMembers(state, into.id)).toContain(user(mover.email).id);

    const identity = await owner(h.app).db.selectFrom('trainsync.identities').selectAll().where('employee_id', '=', 'J001').executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ platform_user_id: created.id, active: true, email: j1.email });
    expect([...identity.groups].sort()).toEqual([state.groups[0]!.id, state.groups[2]!.id].sort());
    const audit = await owner(h.app).db.selectFrom('trainsync.provisioning_audit').selectAll().where('employee_id', '=', leaver.employee_id).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ kind: 'disable', status: 'succeeded', attempts: 1, feed_hash: result.feed.hash, before: { active: true }, currently_active: false });
  });

  it('an unchanged feed makes zero write calls', async () => {
    h.sim.resetRequests();
    const result = await run(rowsFromState(h.sim.state));
    expect(result.plan.actions).toEqual([]);
    expect(result.applied?.audit).toEqual([]);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(provisionExitCode(result)).toBe(0);
  });

  it('the same plan enqueued twice runs each action once', async () => {
    const rows = [...rowsFromState(h.sim.state), joiner('J003', [h.sim.state.groups[1]!.id])];
    const planned = await run(rows, { dryRun: true });
    expect(planned.plan.actions.map((a) => a.kind)).toEqual(['create-user', 'add-to-group']);
    const first = await enqueuePlan(scopedApp(h.app, DEFAULT_ORG), planned.plan, planned.feed.hash);
    const second = await enqueuePlan(scopedApp(h.app, DEFAULT_ORG), planned.plan, planned.feed.hash);
    expect(first.enqueued).toHaveLength(2);
    expect(second.enqueued).toEqual([]);
    expect(second.skippedEmployees).toEqual(['J003']);
    h.sim.resetRequests();
    const audit = await waitForActions(scopedApp(h.app, DEFAULT_ORG), [...second.waitingOn]);
    expect(audit.map((r) => [r.kind, r.status, r.attempts])).toEqual([['create-user', 'succeeded', 1], ['add-to-group', 'succeeded', 1]]);
    expect(writeCallCount(h.sim.requests)).toBe(2);
  });

  it('full mode: an employee missing from the feed is a leaver; a dropped group is removed; delta mode touches only listed rows', async () => {
    const state = h.sim.state;
    const rows = rowsFromState(state);
    const activeRows = rows.filter((r) => r.status === 'active');
    const missing = activeRows[7]!;
    const grouped = activeRows.find((r) => r.groups.length > 0 && r.employee_id !== missing.employee_id)!;
    const dropped = grouped.groups[0]!;
    grouped.groups = grouped.groups.slice(1);
    const result = await run(rows.filter((r) => r !== missing));
    expect(result.plan.actions.map((a) => `${a.kind}:${a.employeeId}`).sort()).toEqual([`disable:${missing.employee_id}`, `remove-from-group:${grouped.employee_id}`].sort());
    expect(statusesOf(result)).toEqual(['succeeded']);
    expect(user(missing.email).hasAccess).toBe(false);
    expect(groupMembers(state, dropped)).not.toContain(user(grouped.email).id);

    const target = rowsFromState(state).find((r) => r.status === 'active')!;
    const before = accessSnapshot(state);
    const delta = await run([{ ...target, status: 'leave' }], { mode: 'delta' });
    expect(delta.plan.actions.map((a) => a.id)).toEqual([expect.stringMatching(new RegExp(`^disable:${target.employee_id}:v\\d+$`))]);
    const targetId = user(target.email).id;
    expect(accessSnapshot(state)).toEqual({ ...before, [targetId]: false });
  });

  it('refuses a mass disable without --force: nothing is enqueued and nothing changes', async () => {
    const state = h.sim.state;
    const before = accessSnapshot(state);
    const auditBefore = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    h.sim.resetRequests();
    // A feed cut short: only the first few employees, read in full mode. The feed-shrink guard is
    // the pipeline's now, so it stands before provisionFeed too (not only before the command).
    const cut = rowsFromState(state).slice(0, 5);
    const shrunk = await run(cut);
    expect(shrunk.plan.refused?.reason).toBe('feed-shrink');
    expect(shrunk.shrink?.decision.refused).toBe(true);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    // Said to be right (--allow-shrink), the disable limit still holds it.
    const result = await run(cut, { allowShrink: true });
    expect(result.plan.refused?.reason).toBe('max-disable');
    expect(result.plan.refused?.message).toMatch(/nothing was enqueued.*--dry-run.*--force and that number given to --confirm/s);
    expect(result.applied).toBeUndefined();
    expect(provisionExitCode(result)).toBe(2);
    expect(writeCallCount(h.sim.requests)).toBe(0);
    expect(accessSnapshot(state)).toEqual(before);
    const auditAfter = await owner(h.app).db.selectFrom('trainsync.provisioning_actions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(auditAfter.n)).toBe(Number(auditBefore.n));
    // The same file read twice: the shrink guard's refusal, then the disable limit's, each recorded.
    const feedRows = await owner(h.app).db.selectFrom('trainsync.feeds').selectAll().where('hash', '=', result.feed.hash).orderBy('id').execute();
    expect(feedRows.map((r) => ({ refused: r.refused, dry_run: r.dry_run, rows: r.rows }))).toEqual([
      { refused: 'feed-shrink', dry_run: false, rows: 5 },
      { refused: 'max-disable', dry_run: false, rows: 5 },
    ]);
  });

  describe('malformed feeds give per-row errors and never disable anyone by omission', () => {
    let before: Record<string, boolean>;
    beforeAll(() => {
      before = accessSnapshot(h.sim.state);
      h.sim.resetRequests();
    });
    afterAll(() => {
      expect(writeCallCount(h.sim.requests)).toBe(0);
      expect(accessSnapshot(h.sim.state)).toEqual(before);
    });

    it('a file cut off inside a quoted value stops the run before planning (exit 2, nothing enqueued)', async () => {
      const all = rowsFromState(h.sim.state);
      const last = all[all.length - 1]!;
      const text = toCsv(all.slice(0, -1)) + `${last.employee_id},${last.email},${last.first_name},"${last.last_name}`;
      const result = await run(files.write('truncated.csv', text));
      expect(result.feed.fileErrors).toHaveLength(1);
      expect(result.feed.fileErrors[0]).toMatch(new RegExp(`^truncated\\.csv line ${all.length + 1}: .*never closed`));
      expect(result.feed.rows).toEqual([]);
      expect(result.plan.refused?.reason).toBe('feed-errors');
      expect(result.plan.actions).toEqual([]);
      expect(result.applied).toBeUndefined();
      expect(provisionExitCode(result)).toBe(2);
    });

    it('a wrong header refuses the whole file, even with --force', async () => {
      const text = toCsv(rowsFromState(h.sim.state)).replace(/^employee_id,email,/, 'id,mail,');
      const result = await run(files.write('wrong-header.csv', text), { force: true });
      expect(result.plan.refused?.reason).toBe('feed-errors');
      expect(result.feed.fileErrors.join(' ')).toMatch(/employee_id/);
      expect(result.plan.actions).toEqual([]);
      expect(provisionExitCode(result)).toBe(2);
    });

    it('duplicate employee ids and e-mails leave those rows out and disable none of them', async () => {
      const rows = rowsFromState(h.sim.state);
      const [a, b] = rows.filter((r) => r.status === 'active');
      const result = await run([...rows, { ...b!, employee_id: a!.employee_id }]);
      const lines = result.feed.errors.map((e) => `${e.line}:${e.field}`);
      expect(lines).toContain(`${rows.indexOf(a!) + 2}:employee_id`);
      expect(lines).toContain(`${rows.indexOf(b!) + 2}:email`);
      expect(result.feed.errors.every((e) => /line \d+, field \w+: .* keep one row per employee/.test(e.message))).toBe(true);
      expect(result.plan.actions).toEqual([]);
    });

    it('a bad e-mail is reported with its line and field; that employee is not a leaver', async () => {
      const rows = rowsFromState(h.sim.state);
      const c = rows.filter((r) => r.status === 'active')[2]!;
      const result = await run(rows.map((r) => (r === c ? { ...r, email: 'not-an-email' } : r)));
      expect(result.feed.errors.map((e) => [e.line, e.field])).toEqual([[rows.indexOf(c) + 2, 'email']]);
      expect(result.feed.errors[0]!.message).toMatch(/field email: "not-an-email" is not an e-mail address; fix/);
      expect(result.plan.actions).toEqual([]);
    });

    it('a BOM and CRLF line ends read the same as plain LF', async () => {
      const result = await run(files.write('bom-crlf.csv', toCsv(rowsFromState(h.sim.state), { bom: true, crlf: true })));
      expect(result.feed.errors).toEqual([]);
      expect(result.feed.rows.length).toBe(h.sim.state.users.length);
      expect(result.plan.actions).toEqual([]);
      expect(provisionExitCode(result)).toBe(0);
    });
  });

  it('documented 400 codes fail at once with the code kept; a dependent action waits as needs-identity; status lists both', async () => {
    const state = h.sim.state;
    const rows = rowsFromState(state);
    const foreign = joiner('J900', [state.groups[0]!.id], FOREIGN_EMAIL_DOMAIN);
    const someone = rows.find((r) => r.status === 'active')!;
    const unknownGroup = '00000000-0000-4000-8000-000000000001';
    someone.groups = [...someone.groups, unknownGroup].sort();
    const result = await run([...rows, foreign]);
    const byKind = Object.fromEntries(result.applied!.audit.map((r) => [`${r.kind}:${r.employeeId}`, r]));
    expect(byKind['create-user:J900']).toMatchObject({ status: 'failed', errorCode: 'EMAIL_IN_USE', attempts: 1 });
    expect(byKind['add-to-group:J900']).toMatchObject({ status: 'needs-identity', errorCode: 'NEEDS_IDENTITY' });
    expect(byKind[`add-to-group:${someone.employee_id}`]).toMatchObject({ status: 'failed', errorCode: 'GROUP_NOT_FOUND', attempts: 1 });
    expect(provisionExitCode(result)).toBe(1);

    const section = await provisioningAttentionSection(h.app, 'default');
    expect(section.rows.map((r) => `${r.status}:${r.code}`).sort()).toEqual(['failed:EMAIL_IN_USE', 'failed:GROUP_NOT_FOUND', 'needs-identity:NEEDS_IDENTITY']);
    const stored = await auditRows(owner(h.app).scope('default'), [byKind['create-user:J900']!.actionId]);
    expect(stored[0]?.errorMessage).toMatch(/EMAIL_IN_USE/);
  });
});
