import type { FeedRow } from '../feed/types.ts';
import { actionId } from './action-id.ts';
import { describeMaxDisable, resolveMaxDisable } from './limits.ts';
import {
  ACTION_KINDS,
  type ActionKind,
  type ActionState,
  type AppliedEmployee,
  type Plan,
  type PlanInput,
  type PlannedAction,
  type PlanNote,
  type PlanRefusal,
  type PlanRowError,
  type UnsupportedChange,
  type UnsupportedField,
} from './types.ts';

const NO_UPDATE = "there is no update endpoint in the spec; change it in the platform's UI";

interface Builder {
  actions: PlannedAction[];
  unsupported: UnsupportedChange[];
  errors: PlanRowError[];
  notes: PlanNote[];
}

function push(b: Builder, parts: Omit<PlannedAction, 'id'>): void {
  b.actions.push({ id: actionId(parts), ...parts });
}

function unsupported(b: Builder, row: FeedRow, field: UnsupportedField, before: string | null, after: string | null, why: string): void {
  b.unsupported.push({
    employeeId: row.employeeId,
    email: row.email,
    line: row.line,
    field,
    before,
    after,
    message: `${row.employeeId} (line ${row.line}): ${field} ${JSON.stringify(before)} → ${JSON.stringify(after)} is not applied: ${why}`,
  });
}

/** Field changes the API cannot make for an existing account. */
function reportUpdates(b: Builder, row: FeedRow, applied: AppliedEmployee): void {
  if (row.email !== applied.email.toLowerCase()) {
    unsupported(b, row, 'email', applied.email, row.emailDisplay, `${NO_UPDATE}; no second account is created`);
  }
  if (row.firstName !== null && row.firstName !== applied.firstName) unsupported(b, row, 'first_name', applied.firstName, row.firstName, NO_UPDATE);
  if (row.lastName !== null && row.lastName !== applied.lastName) unsupported(b, row, 'last_name', applied.lastName, row.lastName, NO_UPDATE);
  if (applied.role != null && row.role !== applied.role) unsupported(b, row, 'role', applied.role, row.role, NO_UPDATE);
  if (applied.organisationIdentifier != null && row.organisationIdentifier !== applied.organisationIdentifier) {
    unsupported(b, row, 'organisation_identifier', applied.organisationIdentifier, row.organisationIdentifier, NO_UPDATE);
  }
  if (row.platformUserId !== undefined && applied.platformUserId !== null && row.platformUserId !== applied.platformUserId) {
    unsupported(b, row, 'platform_user_id', applied.platformUserId, row.platformUserId, 'the applied identity keeps its platform user; fix the HR system or trainsync.identities');
  }
}

function planJoiner(b: Builder, row: FeedRow, file: string): void {
  if (row.status === 'inactive') {
    b.notes.push({ line: row.line, employeeId: row.employeeId, email: row.email, message: `${row.employeeId} (line ${row.line}): not created: inactive in the feed` });
    return;
  }
  const missing = (['first_name', 'last_name'] as const).filter((f) => (f === 'first_name' ? row.firstName : row.lastName) === null);
  if (missing.length > 0) {
    for (const field of missing) {
      b.errors.push({
        line: row.line,
        employeeId: row.employeeId,
        email: row.email,
        field,
        message: `${file} line ${row.line}, field ${field}: is empty, but ${row.employeeId} is new and the platform needs a first and last name to create the account; fill it in the HR export`,
      });
    }
    return;
  }
  const platformUserId = row.platformUserId ?? null;
  const after: ActionState = {
    email: row.emailDisplay,
    firstName: row.firstName!,
    lastName: row.lastName!,
    role: row.role,
    organisationIdentifier: row.organisationIdentifier,
  };
  push(b, { kind: 'create-user', employeeId: row.employeeId, email: row.email, platformUserId, seq: 0, baseVersion: 0, before: null, after });
  for (const groupId of row.groups) {
    push(b, { kind: 'add-to-group', employeeId: row.employeeId, email: row.email, groupId, platformUserId, seq: 1, baseVersion: 0, before: { member: false }, after: { member: true } });
  }
}

/** Returns whether the row needed any action. */
function planKnown(b: Builder, row: FeedRow, applied: AppliedEmployee): boolean {
  reportUpdates(b, row, applied);
  const base = { employeeId: row.employeeId, email: row.email, platformUserId: applied.platformUserId ?? row.platformUserId ?? null, baseVersion: applied.version ?? 0 };
  if (row.status === 'inactive') {
    if (!applied.active) return false;
    push(b, { ...base, kind: 'disable', seq: 0, before: { active: true }, after: { active: false } });
    return true;
  }
  let changed = false;
  if (!applied.active) {
    push(b, { ...base, kind: 'enable', seq: 0, before: { active: false }, after: { active: true } });
    changed = true;
  }
  const had = new Set(applied.groups.map((g) => g.toLowerCase()));
  const wants = new Set(row.groups);
  for (const groupId of row.groups) {
    if (had.has(groupId)) continue;
    push(b, { ...base, kind: 'add-to-group', groupId, seq: 1, before: { member: false }, after: { member: true } });
    changed = true;
  }
  for (const groupId of [...had].sort()) {
    if (wants.has(groupId)) continue;
    push(b, { ...base, kind: 'remove-from-group', groupId, seq: 1, before: { member: true }, after: { member: false } });
    changed = true;
  }
  return changed;
}

function refusal(plan: Omit<Plan, 'refused'>, input: PlanInput): PlanRefusal | undefined {
  const { options } = input;
  const disables = plan.counts.disable;
  if (disables > plan.maxDisable) {
    const suggestPercent = plan.activeCount > 0 ? Math.ceil((disables * 100) / plan.activeCount) : 100;
    return {
      reason: 'max-disable',
      message:
        `The plan would disable ${disables} employees, more than the limit of ${describeMaxDisable(options.maxDisable, plan.activeCount)}; nothing was enqueued. ` +
        'Review it first with --dry-run (a feed cut short, a wrong --map, or --mode full on a delta feed all look like mass leavers). ' +
        `If it is right, rerun with --force, or raise the limit with --max-disable ${disables} (or --max-disable ${suggestPercent}%).`,
    };
  }
  if (options.freeSeats !== undefined) {
    const needed = plan.counts['create-user'] + plan.counts.enable;
    if (needed > options.freeSeats) {
      return {
        reason: 'seats',
        message:
          `The plan needs ${needed} seats (${plan.counts['create-user']} new accounts, ${plan.counts.enable} re-enabled) but only ${options.freeSeats} are free; nothing was enqueued. ` +
          'Free seats or buy more on the platform, then rerun; or rerun with --force to enqueue anyway (creates beyond the limit fail with USER_LIMIT_REACHED).',
      };
    }
  }
  return undefined;
}

function emptyCounts(): Record<ActionKind, number> {
  return Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as Record<ActionKind, number>;
}

function emptyPlan(input: PlanInput, activeCount: number): Plan {
  return {
    mode: input.mode,
    actions: [],
    byEmployee: {},
    counts: emptyCounts(),
    unsupported: [],
    errors: [],
    notes: [],
    activeCount,
    maxDisable: resolveMaxDisable(input.options.maxDisable, activeCount),
    unchanged: 0,
  };
}

/**
 * Plans the platform changes that bring its accounts in line with the feed. Pure: the
 * same input gives the same plan, actions in a stable order (feed order, then leavers
 * by employee id; per employee by `seq`).
 *
 * - joiner (active, not applied) → create-user, then add-to-group per group;
 *   an inactive joiner is not created (a note says so).
 * - listed inactive, applied active → disable. Full mode also disables applied active
 *   employees the feed does not list, unless their row was invalid or their e-mail is
 *   listed under another employee id (a re-keyed employee, reported as unsupported).
 * - applied inactive, listed active → enable (then group changes).
 * - group differences → add-to-group / remove-from-group.
 * - e-mail, name, role changes → `unsupported` (the API has no update in the spec);
 *   an e-mail change never creates a second account.
 */
export function planProvisioning(input: PlanInput): Plan {
  const file = input.file ?? 'feed';
  const b: Builder = { actions: [], unsupported: [], errors: [], notes: [] };
  const appliedById = new Map<string, AppliedEmployee>();
  const appliedByEmail = new Map<string, AppliedEmployee>();
  let activeCount = 0;
  for (const a of input.applied) {
    appliedById.set(a.employeeId, a);
    appliedByEmail.set(a.email.toLowerCase(), a);
    if (a.active) activeCount += 1;
  }

  if (input.fileErrors !== undefined && input.fileErrors.length > 0) {
    return {
      ...emptyPlan(input, activeCount),
      refused: { reason: 'feed-errors', message: `The feed could not be read, so nothing was planned: ${input.fileErrors.join('; ')}` },
    };
  }

  const listed = new Set<string>();
  /** Applied employees whose e-mail a feed row claims under another id: never leavers. */
  const claimed = new Set<string>();
  let unchanged = 0;
  for (const row of input.rows) {
    listed.add(row.employeeId);
    const applied = appliedById.get(row.employeeId);
    if (applied !== undefined) {
      if (!planKnown(b, row, applied)) unchanged += 1;
      continue;
    }
    const sameEmail = appliedByEmail.get(row.email);
    if (sameEmail !== undefined) {
      claimed.add(sameEmail.employeeId);
      unsupported(b, row, 'employee_id', sameEmail.employeeId, row.employeeId,
        `${row.email} already belongs to employee ${sameEmail.employeeId}; no second account is created and ${sameEmail.employeeId} is not disabled; fix the HR export or trainsync.identities`);
      continue;
    }
    planJoiner(b, row, file);
  }

  if (input.mode === 'full') {
    const leavers = [...appliedById.values()]
      .filter((a) => a.active && !listed.has(a.employeeId) && !claimed.has(a.employeeId)
        && !input.invalidEmployeeIds.has(a.employeeId) && !input.invalidEmails.has(a.email.toLowerCase()))
      .sort((x, y) => (x.employeeId < y.employeeId ? -1 : x.employeeId > y.employeeId ? 1 : 0));
    for (const a of leavers) {
      push(b, {
        kind: 'disable',
        employeeId: a.employeeId,
        email: a.email.toLowerCase(),
        platformUserId: a.platformUserId,
        seq: 0,
        baseVersion: a.version ?? 0,
        before: { active: true },
        after: { active: false },
      });
    }
  }

  const counts = emptyCounts();
  const byEmployee: Record<string, PlannedAction[]> = {};
  for (const action of b.actions) {
    counts[action.kind] += 1;
    (byEmployee[action.employeeId] ??= []).push(action);
  }
  const base: Omit<Plan, 'refused'> = {
    mode: input.mode,
    actions: b.actions,
    byEmployee,
    counts,
    unsupported: b.unsupported,
    errors: b.errors,
    notes: b.notes,
    activeCount,
    maxDisable: resolveMaxDisable(input.options.maxDisable, activeCount),
    unchanged,
  };
  const refused = input.options.force ? undefined : refusal(base, input);
  return refused === undefined ? base : { ...base, refused };
}
