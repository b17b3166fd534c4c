import { describe, expect, it } from 'vitest';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { actionId } from '../src/provisioning/plan/action-id.ts';
import { formatPlanTable, planToJson } from '../src/commands/render/plan-format.ts';
import { parseMaxDisable } from '../src/settings/max-disable.ts';
import { resolveMaxDisable } from '../src/provisioning/plan/limits.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee, PlanInput, PlanOptions } from '../src/provisioning/plan/types.ts';

const GA = 'aaaaaaaa-0000-0000-0000-000000000001';
const GB = 'bbbbbbbb-0000-0000-0000-000000000002';
const GC = 'cccccccc-0000-0000-0000-000000000003';
const UID = 'dddddddd-0000-0000-0000-000000000004';

let nextLine = 2;
function row(employeeId: string, over: Partial<FeedRow> = {}): FeedRow {
  const email = over.email ?? `${employeeId.toLowerCase()}@example.com`;
  return {
    line: nextLine++,
    employeeId,
    email,
    emailDisplay: email,
    firstName: 'First',
    lastName: employeeId,
    status: 'active',
    groups: [],
    role: 'USER',
    organisationIdentifier: employeeId,
    ...over,
  };
}

function applied(employeeId: string, over: Partial<AppliedEmployee> = {}): AppliedEmployee {
  return {
    employeeId,
    email: `${employeeId.toLowerCase()}@example.com`,
    platformUserId: null,
    firstName: 'First',
    lastName: employeeId,
    active: true,
    groups: [],
    version: 3,
    ...over,
  };
}

function plan(rows: FeedRow[], appliedState: AppliedEmployee[], extra: Partial<PlanInput> = {}, options: Partial<PlanOptions> = {}) {
  return planProvisioning({
    rows,
    invalidEmployeeIds: new Set(),
    invalidEmails: new Set(),
    applied: appliedState,
    mode: 'full',
    options: { force: false, ...options },
    file: 'hr.csv',
    ...extra,
  });
}

const summary = (p: ReturnType<typeof plan>): string[] => p.actions.map((a) => `${a.kind} ${a.employeeId}${a.groupId ? ` ${a.groupId.slice(0, 2)}` : ''}`);

describe('planProvisioning', () => {
  it('creates joiners before adding them to their groups, and skips inactive joiners with a note', () => {
    const p = plan([row('E1', { groups: [GA, GB], emailDisplay: 'E1@Example.com', email: 'e1@example.com' }), row('E2', { status: 'inactive' })], []);
    expect(summary(p)).toEqual(['create-user E1', 'add-to-group E1 aa', 'add-to-group E1 bb']);
    expect(p.actions.map((a) => a.seq)).toEqual([0, 1, 1]);
    expect(p.actions.at(0)).toMatchObject({
      id: 'create-user:e1@example.com',
      before: null,
      after: { email: 'E1@Example.com', firstName: 'First', lastName: 'E1', role: 'USER', organisationIdentifier: 'E1' },
    });
    expect(p.notes).toEqual([expect.objectContaining({ employeeId: 'E2', message: expect.stringContaining('not created: inactive in the feed') })]);
    expect(p.counts).toEqual({ 'create-user': 1, enable: 0, disable: 0, 'add-to-group': 2, 'remove-from-group': 0 });
    expect(p.byEmployee.get('E1')).toHaveLength(3);
  });

  it('reports a joiner without names as a row error and plans nothing for it', () => {
    const r = row('E1', { lastName: null });
    const p = plan([r], []);
    expect(p.actions.toArray()).toEqual([]);
    expect(p.errors).toEqual([
      expect.objectContaining({ field: 'last_name', message: `hr.csv line ${r.line}, field last_name: is empty, but E1 is new and the platform needs a first and last name to create the account; fill it in the HR export` }),
    ]);
    // A known employee without names in the feed is fine: names are only needed to create.
    expect(plan([row('E2', { firstName: null, lastName: null })], [applied('E2')]).errors).toEqual([]);
  });

  it('disables applied employees missing from a full feed, but not in delta mode', () => {
    const state = [applied('E1'), applied('E2'), applied('E3', { active: false })];
    const full = plan([row('E1')], state);
    expect(summary(full)).toEqual(['disable E2']);
    expect(full.actions.at(0)).toMatchObject({ before: { active: true }, after: { active: false }, id: 'disable:E2:v3' });
    expect(full.unchanged).toBe(1);
    const delta = plan([row('E1')], state, { mode: 'delta' });
    expect(delta.actions.toArray()).toEqual([]);
  });

  it('disables an employee listed as inactive in both modes, and does nothing if already inactive', () => {
    const state = [applied('E1'), applied('E2', { active: false })];
    const rows = [row('E1', { status: 'inactive' }), row('E2', { status: 'inactive' })];
    expect(summary(plan(rows, state, { mode: 'delta' }))).toEqual(['disable E1']);
    expect(summary(plan(rows, state, { mode: 'full' }))).toEqual(['disable E1']);
  });

  it('never takes an employee whose row was invalid for a leaver (by id or by e-mail)', () => {
    const state = [applied('E1'), applied('E2'), applied('E3')];
    const p = plan([], state, { invalidEmployeeIds: new Set(['E1']), invalidEmails: new Set(['e2@example.com']) });
    expect(summary(p)).toEqual(['disable E3']);
  });

  it('enables returners, then applies their group changes', () => {
    const p = plan([row('E1', { groups: [GA] })], [applied('E1', { active: false, groups: [GB] })]);
    expect(summary(p)).toEqual(['enable E1', 'add-to-group E1 aa', 'remove-from-group E1 bb']);
    expect(p.actions.map((a) => a.seq)).toEqual([0, 1, 1]);
  });

  it('moves employees between groups, comparing GUIDs case-insensitively', () => {
    const p = plan([row('E1', { groups: [GA, GC] })], [applied('E1', { groups: [GA.toUpperCase(), GB], platformUserId: UID })]);
    expect(summary(p)).toEqual(['add-to-group E1 cc', 'remove-from-group E1 bb']);
    expect(p.actions.at(0)).toMatchObject({ platformUserId: UID, before: { member: false }, after: { member: true }, id: `add-to-group:E1:${GC}:v3` });
  });

  it('reports e-mail, name and role changes as unsupported and never creates a second account', () => {
    const p = plan(
      [row('E1', { email: 'new@example.com', emailDisplay: 'New@Example.com', firstName: 'Renamed', role: 'ADMIN' })],
      [applied('E1', { role: 'USER' })],
    );
    expect(p.actions.toArray()).toEqual([]);
    expect(p.unsupported.map((u) => [u.field, u.before, u.after])).toEqual([
      ['email', 'e1@example.com', 'New@Example.com'],
      ['first_name', 'First', 'Renamed'],
      ['role', 'USER', 'ADMIN'],
    ]);
    expect(p.unsupported[0]!.message).toContain("no update endpoint in the spec; change it in the platform's UI; no second account is created");
  });

  it('treats a known e-mail under a new employee_id as unsupported: no create, no disable', () => {
    const p = plan([row('E9', { email: 'e1@example.com' })], [applied('E1')]);
    expect(p.actions.toArray()).toEqual([]);
    expect(p.unsupported).toEqual([expect.objectContaining({ field: 'employee_id', before: 'E1', after: 'E9' })]);
  });

  it('refuses more disables than the limit unless forced, explaining review and override', () => {
    const state = Array.from({ length: 100 }, (_, i) => applied(`E${i}`));
    const keep = state.slice(0, 85).map((a) => row(a.employeeId));
    const refused = plan(keep, state);
    expect(refused.counts.disable).toBe(15);
    expect(refused.maxDisable).toBe(10);
    expect(refused.refused?.reason).toBe('max-disable');
    expect(refused.refused?.message).toContain('would disable 15 employees, more than the limit of 10 (the default: the larger of 5 and 10% of 100 active employees)');
    expect(refused.refused?.message).toContain('--dry-run');
    // The override is the typed count, with --force or by approving: no flag that would apply it as it stands.
    expect(refused.refused?.message).toContain('rerun with --force and that number given to --confirm');
    expect(refused.refused?.message).not.toMatch(/--max-disable \d/);
    expect(plan(keep, state, {}, { force: true }).refused).toBeUndefined();
    expect(plan(keep, state, {}, { maxDisable: 15 }).refused).toBeUndefined();
    expect(plan(keep, state, {}, { maxDisable: { percent: 14 } }).refused?.reason).toBe('max-disable');
    // The floor of 5 protects small organisations.
    const small = Array.from({ length: 10 }, (_, i) => applied(`S${i}`));
    expect(plan(small.slice(0, 5).map((a) => row(a.employeeId)), small).refused).toBeUndefined();
    expect(plan(small.slice(0, 4).map((a) => row(a.employeeId)), small).refused?.reason).toBe('max-disable');
  });

  it('refuses creates and enables beyond the free seats, when the seats are known', () => {
    const rows = [row('N1'), row('N2'), row('R1')];
    const state = [applied('R1', { active: false })];
    expect(plan(rows, state, {}, { freeSeats: 2 }).refused).toEqual({
      reason: 'seats',
      message: expect.stringContaining('needs 3 seats (2 new accounts, 1 re-enabled) but only 2 are free'),
    });
    expect(plan(rows, state, {}, { freeSeats: 3 }).refused).toBeUndefined();
    expect(plan(rows, state).refused).toBeUndefined();
    expect(plan(rows, state, {}, { freeSeats: 0, force: true }).refused).toBeUndefined();
  });

  it('gives the same action ids for the same feed, and new ids once the applied state has moved on', () => {
    const rows = [row('E1', { status: 'inactive' }), row('E2', { groups: [GA] }), row('E3', { groups: [GB] })];
    const state = [applied('E1'), applied('E3', { version: 7 })];
    const first = plan(rows, state);
    const second = plan(rows.map((r) => ({ ...r })), state.map((a) => ({ ...a })));
    expect(second.actions.map((a) => a.id)).toEqual(first.actions.map((a) => a.id));
    expect(new Set(first.actions.map((a) => a.id)).size).toBe(first.actions.length);
    expect(first.actions.map((a) => a.id)).toEqual([
      'disable:E1:v3',
      'create-user:e2@example.com',
      `add-to-group:E2:${GA}:v0`,
      `add-to-group:E3:${GB}:v7`,
    ]);
    // Disabled, enabled again, and now disabled once more: a new action, not a retry.
    const later = plan([row('E1', { status: 'inactive' })], [applied('E1', { version: 5 })], { mode: 'delta' });
    expect(later.actions.at(0)!.id).toBe('disable:E1:v5');
    expect(actionId({ kind: 'create-user', employeeId: 'X', email: 'A@B.com', baseVersion: 0 })).toBe('create-user:a@b.com');
    // Creating again an account deleted outside trainsync is a new action, not a retry of the first create.
    expect(actionId({ kind: 'create-user', employeeId: 'X', email: 'A@B.com', baseVersion: 9 })).toBe('create-user:a@b.com:v9');
  });

  it('reads as plain data: the JSON round-trips and the table lists every kind', () => {
    const p = plan([row('E1', { groups: [GA] }), row('E2', { firstName: null })], [applied('E3'), applied('E4', { email: 'x@y.z' })]);
    // Actions held by column read as an array of actions, and byEmployee as an object of them.
    expect(JSON.parse(planToJson(p))).toEqual({ ...p, actions: p.actions.toArray(), byEmployee: p.byEmployee.toJSON() });
    const table = formatPlanTable(p);
    for (const label of ['create-user', 'enable', 'disable', 'add-to-group', 'remove-from-group', 'unchanged', 'unsupported change', 'cannot plan (row error)']) {
      expect(table).toContain(label);
    }
    expect(table).toMatch(/disable\s*│\s*2\s*│\s*e3@example\.com/);
    expect(table).toContain('error: hr.csv line');
  });
});

describe('parseMaxDisable', () => {
  it('reads counts and percentages and rejects anything else', () => {
    expect(parseMaxDisable('5')).toBe(5);
    expect(parseMaxDisable(' 10% ')).toEqual({ percent: 10 });
    expect(parseMaxDisable('2.5%')).toEqual({ percent: 2.5 });
    expect(() => parseMaxDisable('ten')).toThrow(/neither a number of employees/);
    expect(() => parseMaxDisable('150%')).toThrow(/over 100%/);
    expect(resolveMaxDisable(undefined, 1000)).toBe(100);
    expect(resolveMaxDisable(undefined, 20)).toBe(5);
    expect(resolveMaxDisable({ percent: 2.5 }, 1000)).toBe(25);
  });
});

describe('planProvisioning with a feed that could not be read', () => {
  it('plans nothing, even when forced, instead of taking everyone for a leaver', () => {
    const p = plan([], [applied('E1'), applied('E2')], { fileErrors: ['hr.csv line 1: the header has no column for email'] }, { force: true });
    expect(p.actions.toArray()).toEqual([]);
    expect(p.refused).toEqual({ reason: 'feed-errors', message: 'The feed could not be read, so nothing was planned: hr.csv line 1: the header has no column for email' });
    expect(p.activeCount).toBe(2);
  });
});

describe('planning against the platform as it is now (pure)', () => {
  const U1 = '11111111-0000-4000-8000-000000000001';
  const U2 = '22222222-0000-4000-8000-000000000002';
  function view(accounts: Array<{ id: string; email: string; hasAccess: boolean }>, complete = true): PlanInput['platform'] {
    return {
      byId: new Map(accounts.map((a) => [a.id, a])),
      byEmail: new Map(accounts.map((a) => [a.email, a])),
      complete,
      source: 'api',
      asOf: new Date('2026-11-24T06:00:00Z'),
    };
  }

  it('an account missing from an incomplete listing is not taken as deleted; one missing from a complete listing is', () => {
    const known = applied('E1', { platformUserId: U1, groups: [GA] });
    const rows = [row('E1', { groups: [GA] })];
    expect(plan(rows, [known], { platform: view([], false) }).actions.toArray()).toEqual([]);
    const recreated = plan(rows, [known], { platform: view([]) });
    expect(recreated.actions.map((a) => [a.kind, a.id, a.platformUserId])).toEqual([
      ['create-user', 'create-user:e1@example.com:v3', null],
      ['add-to-group', `add-to-group:E1:${GA}:v3`, null],
    ]);
    expect(recreated.repairs).toBe(2);
  });

  it('without a known id, an account not found by e-mail keeps the applied state; found by e-mail, it is compared', () => {
    const leaver = applied('E1', { active: false });
    const rows = [row('E1', { status: 'inactive' })];
    expect(plan(rows, [leaver], { platform: view([]) }).actions.toArray()).toEqual([]);
    const byEmail = plan(rows, [leaver], { platform: view([{ id: U1, email: 'e1@example.com', hasAccess: true }]), leaverSince: new Map([['E1', '2026-11-02']]) });
    expect(byEmail.actions.map((a) => [a.kind, a.repair])).toEqual([['disable', 'platform shows access (GET users); HR says leaver since 2026-11-02']]);
  });

  it('a leaver missing from a full feed whose access is back is disabled again; the guard counts the repair', () => {
    const gone = Array.from({ length: 6 }, (_, i) => applied(`L${i}`, { active: false, platformUserId: `${i}1111111-0000-4000-8000-000000000001` }));
    const platform = view(gone.map((g) => ({ id: g.platformUserId!, email: g.email, hasAccess: true })));
    const p = plan([], gone, { platform });
    expect(p.counts.disable).toBe(6);
    expect(p.actions.at(0)!.repair).toBe('platform shows access (GET users); HR: not in the feed');
    expect(p.refused?.reason).toBe('max-disable');
    expect(p.refused?.message).toMatch(/disable 6 employees \(6 of them repair drift/);
    expect(plan([], gone, { platform }, { force: true }).refused).toBeUndefined();
  });

  it('access removed by hand: restore enables again (seats counted), keep reports it; a returner enabled by hand needs no write', () => {
    const rows = [row('E1'), row('E2')];
    const state = [applied('E1', { platformUserId: U1 }), applied('E2', { platformUserId: U2, active: false })];
    const platform = view([{ id: U1, email: 'e1@example.com', hasAccess: false }, { id: U2, email: 'e2@example.com', hasAccess: true }]);
    const restored = plan(rows, state, { platform }, { freeSeats: 0 });
    expect(restored.actions.map((a) => `${a.kind} ${a.employeeId}`)).toEqual(['enable E1']);
    expect(restored.refused?.reason).toBe('seats');
    const kept = plan(rows, state, { platform }, { accessRemoved: 'keep' });
    expect(kept.actions.toArray()).toEqual([]);
    expect(kept.drift.map((d) => d.employeeId)).toEqual(['E1']);
    expect(kept.unchanged).toBe(2);
  });

  it('without a platform view the plan says why, and plans from the applied state as before', () => {
    const p = plan([row('E1', { status: 'inactive' })], [applied('E1', { active: false, platformUserId: U1 })], { platformNote: 'the platform offers no GET users' });
    expect(p.actions.toArray()).toEqual([]);
    expect(p.platform).toMatch(/^platform state not read: the platform offers no GET users/);
    expect(formatPlanTable(p)).toContain('platform state not read');
  });
});
