import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FeedRow } from '../src/provisioning/feed/types.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import type { AppliedEmployee } from '../src/provisioning/plan/types.ts';
import { platformState, settledByQueuedActions } from '../src/scim/platform-state.ts';

/**
 * The rule that lets a SCIM change of a busy employee be marked planned without a plan: it
 * states the platform state planned last. Checked against the planner itself: a row and the
 * same row with other HR data plan the same actions, whatever the applied state.
 */

const GROUPS = ['0f0e0d0c-0b0a-4909-8807-060504030201', '1f0e0d0c-0b0a-4909-8807-060504030201', '2f0e0d0c-0b0a-4909-8807-060504030201'];
const name = fc.option(fc.constantFrom('Ann', 'Bob', 'Cy'), { nil: null });
const groups = fc.subarray(GROUPS).map((g) => [...g].sort());
const attributes = fc.option(fc.dictionary(fc.constantFrom('title', 'department', 'costCenter', 'manager'), fc.string({ maxLength: 8 })), { nil: undefined });

const rowArb = fc.record({
  email: fc.constantFrom('ann@example.com', 'bob@example.com'),
  firstName: name,
  lastName: name,
  status: fc.constantFrom('active' as const, 'inactive' as const),
  groups,
  attributes,
}).map(({ email, attributes: attrs, ...rest }): FeedRow => ({
  line: 1, employeeId: 'E1', email, emailDisplay: email, role: 'USER', organisationIdentifier: 'E1', ...rest, ...(attrs ? { attributes: attrs } : {}),
}));

const appliedArb = fc.option(
  fc.record({ active: fc.boolean(), groups, firstName: name, lastName: name, platformUserId: fc.option(fc.constant('6c3f3c1e-0000-4000-8000-000000000001'), { nil: null }) }).map(
    (a): AppliedEmployee => ({ employeeId: 'E1', email: 'ann@example.com', version: 1, ...a }),
  ),
  { nil: undefined },
);

const plan = (row: FeedRow, applied: AppliedEmployee | undefined) =>
  planProvisioning({ rows: [row], invalidEmployeeIds: new Set(), invalidEmails: new Set(), applied: applied ? [applied] : [], mode: 'delta', options: { force: true }, file: 'SCIM' }).actions.map(({ id: _id, ...a }) => a);

describe('settledByQueuedActions', () => {
  it('a row with other HR data only is settled, and plans the same actions as the row planned', () => {
    fc.assert(
      fc.property(rowArb, attributes, appliedArb, (planned, other, applied) => {
        const { attributes: _drop, ...bare } = planned;
        const next: FeedRow = other ? { ...bare, attributes: other } : bare;
        expect(settledByQueuedActions(platformState(planned), next)).toBe(true);
        expect(plan(next, applied)).toEqual(plan(planned, applied));
      }),
    );
  });

  it('a row whose platform state differs is never settled; nothing planned yet settles nothing', () => {
    fc.assert(
      fc.property(rowArb, rowArb, (planned, next) => {
        const same = platformState(planned) === platformState(next);
        expect(settledByQueuedActions(platformState(planned), next)).toBe(same);
        expect(settledByQueuedActions(null, next)).toBe(false);
        expect(settledByQueuedActions(undefined, next)).toBe(false);
      }),
    );
  });
});
