import { describe, expect, it } from 'vitest';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { confirmationProblem } from '../src/provisioning/pipeline/confirm.ts';
import { FORCE_ASK, runGuards, type GuardInput } from '../src/provisioning/pipeline/guards.ts';
import { actionReasons } from '../src/provisioning/pipeline/reasons.ts';
import type { DisableGuard } from '../src/provisioning/pipeline/types.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee, Plan } from '../src/provisioning/plan/types.ts';

/** The pure parts of the provisioning pipeline: its guards, the audit reasons, the typed confirmation. */

const row = (id: string, status: 'active' | 'inactive', line: number, groups: string[] = []): FeedRow => ({
  line,
  employeeId: id,
  email: `${id.toLowerCase()}@example.com`,
  emailDisplay: `${id.toLowerCase()}@example.com`,
  firstName: 'First',
  lastName: id,
  status,
  groups,
  role: 'USER',
  organisationIdentifier: id,
});
const applied = (id: string): AppliedEmployee => ({ employeeId: id, email: `${id.toLowerCase()}@example.com`, platformUserId: null, firstName: 'First', lastName: id, active: true, groups: [], version: 2 });
const GROUP = '0f0e0d0c-0b0a-4909-8807-060504030201';

/** 20 applied employees; the rows make `leavers` of them inactive and add a joiner. */
function planWith(leavers: number, mode: 'full' | 'delta' = 'delta'): Plan {
  const staff = Array.from({ length: 20 }, (_, i) => `E${String(i).padStart(2, '0')}`);
  const rows = [...staff.slice(0, leavers).map((id, i) => row(id, 'inactive', i + 2)), row('J1', 'active', 40, [GROUP])];
  return planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: staff.map(applied), mode, options: { force: true }, file: 'hr.csv' });
}

const whole: DisableGuard = { maxDisable: undefined, setting: '--max-disable', holds: 'plan' };
const excess: DisableGuard = { maxDisable: 3, setting: 'TRAINSYNC_SCIM_MAX_DISABLE', window: '1 hour', holds: 'excess' };
const input = (plan: Plan, guard: DisableGuard, more: Partial<GuardInput> = {}): GuardInput => ({
  plan,
  guard,
  label: guard.holds === 'plan' ? 'hr.csv' : 'SCIM',
  activeCount: plan.activeCount,
  recent: 0,
  alreadyHeld: new Set(),
  freeSeats: undefined,
  force: false,
  ...more,
});

describe('the disable guard, a plan held whole (a feed, a repair)', () => {
  it('lets a plan within the limit through, and holds every employee of one past it, with the refusal people read', () => {
    expect(runGuards(input(planWith(5), whole))).toEqual({ held: [], limit: 5, activeCount: 20 });
    const verdict = runGuards(input(planWith(6), whole));
    expect(verdict.refused?.reason).toBe('max-disable');
    expect(verdict.refused?.message).toMatch(/^The plan would disable 6 employees, more than the limit of 5 \(the default: the larger of 5 and 10% of 20 active employees\); nothing was enqueued\./);
    // It names no flag that would apply it as it stands (--force alone, a raised --max-disable): the count is typed.
    expect(verdict.refused?.message).toContain('If it is right, approve it with the number of people who lose access typed');
    expect(verdict.refused?.message).not.toMatch(/--max-disable \d|rerun with --force[,.]/);
    // The joiner waits with the leavers: a plan is one statement.
    expect(verdict.held.sort()).toEqual(['E00', 'E01', 'E02', 'E03', 'E04', 'E05', 'J1']);
  });

  it('says what the planner says without force', () => {
    const plan = planWith(6);
    const unforced = planProvisioning({ rows: [...Array.from({ length: 6 }, (_, i) => row(`E0${i}`, 'inactive', i + 2)), row('J1', 'active', 40, [GROUP])], invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: Array.from({ length: 20 }, (_, i) => applied(`E${String(i).padStart(2, '0')}`)), mode: 'delta', options: { force: false }, file: 'hr.csv' });
    expect(runGuards(input(plan, whole)).refused).toEqual(unforced.refused);
  });

  it('lets approved people through; anyone else still meets the limit; --force holds nothing', () => {
    const plan = planWith(8);
    const approved = new Set(['E00', 'E01', 'E02', 'E03', 'E04', 'E05', 'E06', 'E07']);
    expect(runGuards(input(plan, whole, { approved }))).toEqual({ held: [], limit: 5, activeCount: 20 });
    expect(runGuards(input(plan, whole, { approved: new Set(['E00', 'E01']) })).refused?.message).toMatch(/would disable 6 employees/);
    // --force lifts the disable limit only with the plan's count typed (--confirm N); alone it is refused, and nothing is held.
    expect(runGuards(input(plan, whole, { force: true, confirm: { typed: 8, ask: FORCE_ASK } }))).toEqual({ held: [], limit: 5, activeCount: 20 });
    const alone = runGuards(input(plan, whole, { force: true }));
    expect(alone).toMatchObject({ refused: { reason: 'confirm' }, held: [] });
    expect(alone.refused?.message).toMatch(/^--force alone does not apply a plan past the disable limit of 5: /);
    const wrong = runGuards(input(plan, whole, { force: true, confirm: { typed: 7, ask: FORCE_ASK } }));
    expect(wrong).toMatchObject({ refused: { reason: 'confirm' }, held: [] });
    expect(wrong.refused?.message).toMatch(/"7" is not the number of people the plan takes access away from/);
    // Within the limit --force needs no count (the seats), but a wrong count given is still refused.
    expect(runGuards(input(planWith(3), whole, { force: true })).refused).toBeUndefined();
    expect(runGuards(input(planWith(3), whole, { force: true, confirm: { typed: 2, ask: FORCE_ASK } })).refused?.reason).toBe('confirm');
  });

  it('refuses creates beyond the free seats, without holding them', () => {
    const verdict = runGuards(input(planWith(0), whole, { freeSeats: 0 }));
    expect(verdict.refused?.reason).toBe('seats');
    expect(verdict.held).toEqual([]);
    expect(runGuards(input(planWith(0), whole, { freeSeats: 1 })).refused).toBeUndefined();
  });
});

describe('the disable guard, the excess held (SCIM)', () => {
  it('applies disables up to the limit and holds the rest, the window counting too', () => {
    const plan = planWith(5);
    const verdict = runGuards(input(plan, excess));
    expect(verdict.held).toEqual(['E03', 'E04']);
    expect(verdict.refused).toBeUndefined();
    expect(verdict.reason).toBe('5 deactivations via SCIM within 1 hour, over the limit of 3 (TRAINSYNC_SCIM_MAX_DISABLE 3)');
    const later = runGuards(input(plan, excess, { recent: 2 }));
    expect(later.held).toEqual(['E01', 'E02', 'E03', 'E04']);
    expect(later.reason).toMatch(/^7 deactivations via SCIM within 1 hour/);
  });

  it('keeps people already held held without spending the allowance, and without a new reason', () => {
    const plan = planWith(3);
    const retry = runGuards(input(plan, excess, { alreadyHeld: new Set(['E00', 'E01', 'E02']) }));
    expect(retry).toEqual({ held: ['E00', 'E01', 'E02'], limit: 3, activeCount: 20 });
    const mixed = runGuards(input(planWith(5), excess, { alreadyHeld: new Set(['E00']) }));
    expect(mixed.held).toEqual(['E00', 'E04']);
    expect(mixed.reason).toMatch(/^4 deactivations/);
  });

  it('lets approved people through, already held or not', () => {
    const verdict = runGuards(input(planWith(5), excess, { recent: 10, alreadyHeld: new Set(['E00', 'E01']), approved: new Set(['E00', 'E01', 'E02', 'E03', 'E04']) }));
    expect(verdict).toEqual({ held: [], limit: 3, activeCount: 20 });
  });

  it('takes a percentage of the active employees it is given', () => {
    const verdict = runGuards(input(planWith(5), { ...excess, maxDisable: { percent: 10 } }, { activeCount: 30 }));
    expect(verdict.limit).toBe(3);
    expect(verdict.reason).toContain('over the limit of 3 (TRAINSYNC_SCIM_MAX_DISABLE 10% of 30 active employees)');
  });
});

describe('audit reasons', () => {
  it('say where the desired state said so and what, the same words for every source', () => {
    const plan = planProvisioning({
      rows: [row('E00', 'inactive', 7), row('J1', 'active', 9, [GROUP])],
      invalidEmployeeIds: new Set(),
      invalidEmails: new Set(),
      applied: ['E00', 'E01'].map(applied),
      mode: 'full',
      options: { force: true },
      file: 'hr.csv',
    });
    const rows = [row('E00', 'inactive', 7), row('J1', 'active', 9, [GROUP])];
    const feed = actionReasons(plan.actions, { kind: 'feed', label: 'hr.csv', mode: 'full', rows });
    expect(Object.fromEntries(feed)).toEqual({
      'disable:E00:v2': 'hr.csv line 7: status inactive',
      'create-user:j1@example.com': 'hr.csv line 9: new employee, active',
      [`add-to-group:J1:${GROUP}:v0`]: `hr.csv line 9: in group ${GROUP}`,
      'disable:E01:v2': 'hr.csv: not listed (full mode): a leaver',
    });
    const scim = actionReasons(plan.actions, { kind: 'scim', label: 'SCIM', mode: 'delta', rows });
    expect(scim.get('disable:E00:v2')).toBe('SCIM User E00: status inactive');
    const snapshot = actionReasons(plan.actions, { kind: 'reconcile', label: 'training.employees', mode: 'delta', rows });
    expect(snapshot.get('disable:E00:v2')).toBe('training.employees (E00): status inactive');
  });

  it('name the drift a repair repairs', () => {
    const plan = planWith(1);
    const repaired = plan.actions.map((a) => (a.kind === 'disable' ? { ...a, repair: 'platform shows access (GET users); HR says leaver' } : a));
    const reasons = actionReasons(repaired, { kind: 'reconcile', label: 'training.employees', mode: 'delta', rows: [row('E00', 'inactive', 1)] });
    expect(reasons.get('disable:E00:v2')).toBe('training.employees (E00): drift repaired: platform shows access (GET users); HR says leaver');
  });
});

describe('the typed confirmation', () => {
  const ask = { give: '--confirm N', shownBy: '`trainsync held`' };
  const plan = { what: 'plan #12', verb: 'approve' as const, disables: 8 };

  it('takes exactly the number of people who lose access, typed or given', () => {
    expect(confirmationProblem(plan, 8, ask)).toBeUndefined();
    expect(confirmationProblem(plan, ' 8 ', ask)).toBeUndefined();
  });

  it('refuses none, another number or not a number, naming what to give without giving the number away', () => {
    for (const typed of [undefined, '', '  ']) {
      const problem = confirmationProblem(plan, typed, ask);
      expect(problem).toBe('plan #12 takes access away from people: to approve it, give --confirm N, the number of people who will lose access (`trainsync held` shows it)');
    }
    for (const typed of [7, '9', '8.0', 'eight', '-8', '0x8', '8e0', '+8', '08a']) {
      const problem = confirmationProblem(plan, typed, ask);
      expect(problem).toMatch(/is not the number of people plan #12 takes access away from: give --confirm N with that number/);
      // The count is on the page and in the listing; the refusal does not hand it over.
      if (!String(typed).includes('8')) expect(problem).not.toContain('8');
    }
  });

  it('names the count now only to someone who typed the count the held plan showed, when the platform changed it since', () => {
    const changed = { ...plan, disables: 11, shown: 8 };
    expect(confirmationProblem(changed, 8, ask)).toMatch(/plan #12 took access away from 8 when it was held, and now would take it from 11 people/);
    expect(confirmationProblem(changed, 11, ask)).toBeUndefined();
    // Any other number learns nothing.
    expect(confirmationProblem(changed, 5, ask)).not.toContain('11');
  });

  it("asks nothing of a plan that takes nobody's access", () => {
    expect(confirmationProblem({ what: 'plan #3', verb: 'approve', disables: 0 }, undefined, ask)).toBeUndefined();
  });
});
