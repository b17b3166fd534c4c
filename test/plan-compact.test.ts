import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import { PlanActions } from '../src/provisioning/plan/plan-actions.ts';
import type { AppliedEmployee, PlannedAction } from '../src/provisioning/plan/types.ts';
import { planToJson as planToJsonText } from '../src/commands/render/plan-format.ts';

/**
 * The planner holds a plan's actions by column (plan/plan-actions.ts; docs/benchmarks.md "A
 * large HR feed"). These pin that what is read back is the plan as it was built before: ids
 * in the documented form, `byEmployee` exactly the actions of each employee in plan order,
 * keys in the order of a plain object's (first-seen, array indexes first), JSON as it was.
 */

const GROUPS = ['aaaaaaaa-0000-0000-0000-000000000001', 'bbbbbbbb-0000-0000-0000-000000000002', 'Weird:Group', ''];

function expectedId(a: PlannedAction): string {
  if (a.kind === 'create-user') return a.baseVersion > 0 ? `create-user:${a.email}:v${a.baseVersion}` : `create-user:${a.email}`;
  return `${a.kind}:${a.employeeId}${a.groupId === undefined ? '' : `:${a.groupId}`}:v${a.baseVersion}`;
}

function grouped(actions: readonly PlannedAction[]): Record<string, PlannedAction[]> {
  // No prototype: `constructor` and `__proto__` are plain keys here.
  const out = Object.create(null) as Record<string, PlannedAction[]>;
  for (const a of actions) (out[a.employeeId] ??= []).push(a);
  return out;
}

const person = fc.record({
  id: fc.oneof(fc.constantFrom('E1', 'E2', 'E3', '__proto__', 'constructor', '0', 'É'), fc.string({ minLength: 1, maxLength: 6 })),
  groups: fc.uniqueArray(fc.constantFrom(...GROUPS), { maxLength: 4 }),
  active: fc.boolean(),
  known: fc.boolean(),
  knownGroups: fc.uniqueArray(fc.constantFrom(...GROUPS), { maxLength: 4 }),
  version: fc.nat({ max: 5 }),
  listed: fc.boolean(),
  names: fc.boolean(),
});

describe('a compactly built plan', () => {
  it('has the documented ids and byEmployee holds each employee\'s actions in plan order (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(person, { selector: (p) => p.id, maxLength: 12 }), fc.constantFrom('full' as const, 'delta' as const), (people, mode) => {
        const rows: FeedRow[] = people.filter((p) => p.listed).map((p, i) => {
          const email = `u${i}-${encodeURIComponent(p.id).toLowerCase()}@example.com`;
          return { line: i + 2, employeeId: p.id, email, emailDisplay: email, firstName: p.names ? 'F' : null, lastName: p.names ? 'L' : null, status: p.active ? 'active' : 'inactive', groups: p.groups, role: 'USER', organisationIdentifier: p.id };
        });
        const applied: AppliedEmployee[] = people.filter((p) => p.known).map((p, i) => ({
          employeeId: p.id, email: `k${i}@example.com`, platformUserId: null, firstName: 'F', lastName: 'L', active: !p.active, groups: p.knownGroups, version: p.version,
        }));
        const plan = planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied, mode, options: { force: true } });
        const actions = plan.actions.toArray();
        for (const a of actions) expect(a.id).toBe(expectedId(a));
        expect(JSON.stringify(plan.byEmployee)).toBe(JSON.stringify(grouped(actions)));
        expect(plan.byEmployee.keys()).toEqual(Object.keys(grouped(actions)));
        for (const [employeeId, mine] of plan.byEmployee.entries()) expect(mine.every((a) => a.employeeId === employeeId)).toBe(true);
        // Read back as objects and held again, the plan is the same JSON.
        expect(JSON.stringify(PlanActions.of(actions))).toBe(JSON.stringify(actions));
        expect(JSON.stringify(PlanActions.of(actions).byEmployee)).toBe(JSON.stringify(plan.byEmployee));
      }),
      { numRuns: 300 },
    );
  });

  it('employee ids `constructor` and `__proto__` are planned like any other (failed with a TypeError before)', () => {
    const rows: FeedRow[] = ['constructor', '__proto__'].map((id, i) => ({ line: i + 2, employeeId: id, email: `e${i}@example.com`, emailDisplay: `e${i}@example.com`, firstName: 'F', lastName: 'L', status: 'active', groups: ['g'], role: 'USER', organisationIdentifier: id }));
    const plan = planProvisioning({ rows, invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: [], mode: 'full', options: { force: true } });
    expect(plan.byEmployee.keys()).toEqual(['constructor', '__proto__']);
    expect(plan.byEmployee.get('constructor').map((a) => a.kind)).toEqual(['create-user', 'add-to-group']);
    expect(Object.getPrototypeOf(plan.byEmployee.toJSON())).toBe(Object.prototype);
    expect(JSON.parse(planToJsonText(plan)).byEmployee.__proto__.length).toBe(2);
  });

  it('an empty plan has no employees', () => {
    const plan = planProvisioning({ rows: [], invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: [], mode: 'delta', options: { force: true } });
    expect(plan.byEmployee.toJSON()).toEqual({});
    expect(plan.byEmployee.size).toBe(0);
    expect(plan.actions.toArray()).toEqual([]);
  });
});
