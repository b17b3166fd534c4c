import type { FeedRow, RowList } from '../feed/types.ts';
import { ACTIVE_NO, ACTIVE_YES, MEMBER_NO, MEMBER_YES, PlanActions, type ActionFields, type ActionLayout } from './plan-actions.ts';
import { resolveMaxDisable } from './limits.ts';
import { disableRefusal, seatRefusal } from './refusal.ts';
import {
  ACTION_KINDS,
  type ActionKind,
  type ActionState,
  type AppliedEmployee,
  type Plan,
  type PlanInput,
  type PlanNote,
  type PlanRefusal,
  type PlanRowError,
  type AccessRemovedPolicy,
  type DriftNote,
  type PlatformAccount,
  type PlatformView,
  type UnsupportedChange,
  type UnsupportedField,
} from './types.ts';

const REASSERT = 'membership added again (--reassert-groups): the API offers no read of group membership, so one removed by hand cannot be seen; adding is idempotent';

const NO_UPDATE = "there is no update endpoint in the spec; change it in the platform's UI";

interface Builder {
  actions: PlanActions;
  unsupported: UnsupportedChange[];
  errors: PlanRowError[];
  notes: PlanNote[];
  drift: DriftNote[];
}

/** A known employee's action: its fields read back person first, as they were planned (plan-actions.ts). */
function push(b: Builder, parts: ActionFields, layout: ActionLayout = 'person-first'): void {
  b.actions.add(parts, layout);
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
  const { employeeId, email } = row;
  b.actions.add({ kind: 'create-user', employeeId, email, platformUserId, seq: 0, baseVersion: 0, before: null, after }, 'kind-first');
  for (const groupId of row.groups) {
    b.actions.add({ kind: 'add-to-group', employeeId, email, groupId, platformUserId, seq: 1, baseVersion: 0, before: MEMBER_NO, after: MEMBER_YES }, 'kind-first');
  }
}

/** What the platform shows of an applied employee's account; see `observe`. */
interface Observed {
  /** The account, when the platform view lists it. */
  account: PlatformAccount | undefined;
  /** The account trainsync knows by id is gone from a complete read: deleted outside trainsync. */
  deleted: boolean;
  /** Whether the account has access now: the platform's answer when it has one, else the applied state. */
  hasAccess: boolean;
}

function observe(view: PlatformView | undefined, applied: AppliedEmployee): Observed {
  if (view === undefined) return { account: undefined, deleted: false, hasAccess: applied.active };
  const account = applied.platformUserId !== null ? view.byId.get(applied.platformUserId) : view.byEmail.get(applied.email.toLowerCase());
  if (account !== undefined) return { account, deleted: false, hasAccess: account.hasAccess };
  // Without a known id, an account not found by e-mail proves nothing: keep the applied state.
  const deleted = view.complete && applied.platformUserId !== null;
  return { account, deleted, hasAccess: deleted ? false : applied.active };
}

function describeSource(view: PlatformView): string {
  return view.source === 'api' ? 'GET users' : `training.users as of ${view.asOf.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

interface Context {
  view: PlatformView | undefined;
  leaverSince: ReadonlyMap<string, string> | undefined;
  accessRemoved: AccessRemovedPolicy;
  reassertGroups: boolean;
  file: string;
}

/** An applied employee's account that is gone from the platform, HR still active: create it again, with its groups. */
function planRecreate(b: Builder, row: FeedRow, applied: AppliedEmployee, ctx: Context): void {
  const firstName = row.firstName ?? applied.firstName;
  const lastName = row.lastName ?? applied.lastName;
  if (firstName === null || lastName === null) {
    b.errors.push({
      line: row.line,
      employeeId: row.employeeId,
      email: row.email,
      field: firstName === null ? 'first_name' : 'last_name',
      message: `${ctx.file} line ${row.line}, field ${firstName === null ? 'first_name' : 'last_name'}: is empty, but the account of ${row.employeeId} is gone from the platform and must be created again, which needs a first and last name; fill it in the HR export`,
    });
    return;
  }
  const source = describeSource(ctx.view!);
  const repair = `the platform no longer lists account ${applied.platformUserId} (${source}; deleted outside trainsync); HR says active: created again`;
  // The old account's id is dead: the create learns the new one, and the group changes take it from the identity.
  const base = { employeeId: row.employeeId, email: row.email, platformUserId: null, baseVersion: applied.version ?? 0 };
  const after: ActionState = { email: row.emailDisplay, firstName, lastName, role: row.role, organisationIdentifier: row.organisationIdentifier };
  push(b, { ...base, kind: 'create-user', seq: 0, before: null, after, repair });
  for (const groupId of row.groups) {
    push(b, { ...base, kind: 'add-to-group', groupId, seq: 1, before: MEMBER_NO, after: MEMBER_YES, repair: 'the account was created again; its group memberships went with the old one' });
  }
}

function leaverReason(view: PlatformView, employeeId: string, ctx: Context, listed: boolean): string {
  const since = ctx.leaverSince?.get(employeeId);
  const hr = listed ? `HR says leaver${since ? ` since ${since}` : ' (this feed)'}` : `HR: not in the feed${since ? ` since ${since}` : ''}`;
  return `platform shows access (${describeSource(view)}); ${hr}`;
}

/** Returns whether the row needed any action. */
function planKnown(b: Builder, row: FeedRow, applied: AppliedEmployee, ctx: Context): boolean {
  reportUpdates(b, row, applied);
  const seen = observe(ctx.view, applied);
  const base = { employeeId: row.employeeId, email: row.email, platformUserId: applied.platformUserId ?? row.platformUserId ?? null, baseVersion: applied.version ?? 0 };
  if (row.status === 'inactive') {
    if (!seen.hasAccess) return false;
    // trainsync disabled it before, yet the platform shows access: enabled again by hand.
    const repair = applied.active ? undefined : leaverReason(ctx.view!, row.employeeId, ctx, true);
    push(b, { ...base, kind: 'disable', seq: 0, before: ACTIVE_YES, after: ACTIVE_NO, ...(repair ? { repair } : {}) });
    return true;
  }
  if (seen.deleted) {
    planRecreate(b, row, applied, ctx);
    return true;
  }
  let changed = false;
  if (!seen.hasAccess) {
    if (!applied.active) {
      push(b, { ...base, kind: 'enable', seq: 0, before: ACTIVE_NO, after: ACTIVE_YES });
      changed = true;
    } else if (ctx.accessRemoved === 'restore') {
      const repair = `platform shows no access (${describeSource(ctx.view!)}); HR says active: access removed outside trainsync is restored (TRAINSYNC_DRIFT_ACCESS_REMOVED=restore)`;
      push(b, { ...base, kind: 'enable', seq: 0, before: ACTIVE_NO, after: ACTIVE_YES, repair });
      changed = true;
    } else {
      b.drift.push({
        employeeId: row.employeeId,
        email: row.email,
        message: `${row.employeeId}: platform shows no access (${describeSource(ctx.view!)}) though HR says active; left so (TRAINSYNC_DRIFT_ACCESS_REMOVED=keep): enable it on the platform, or set restore`,
      });
    }
  }
  const had = new Set(applied.groups.map((g) => g.toLowerCase()));
  const wants = new Set(row.groups);
  for (const groupId of row.groups) {
    if (had.has(groupId)) {
      if (ctx.reassertGroups && seen.account !== undefined) {
        push(b, { ...base, kind: 'add-to-group', groupId, seq: 1, before: null, after: MEMBER_YES, repair: REASSERT });
        changed = true;
      }
      continue;
    }
    push(b, { ...base, kind: 'add-to-group', groupId, seq: 1, before: MEMBER_NO, after: MEMBER_YES });
    changed = true;
  }
  for (const groupId of [...had].sort()) {
    if (wants.has(groupId)) continue;
    push(b, { ...base, kind: 'remove-from-group', groupId, seq: 1, before: MEMBER_YES, after: MEMBER_NO });
    changed = true;
  }
  return changed;
}

function refusal(plan: Omit<Plan, 'refused'>, input: PlanInput): PlanRefusal | undefined {
  const disables = plan.counts.disable;
  if (disables > plan.maxDisable) {
    let repairs = 0;
    for (let i = 0; i < plan.actions.length; i += 1) if (plan.actions.kindAt(i) === 'disable' && plan.actions.hasRepairAt(i)) repairs += 1;
    return disableRefusal(disables, repairs, input.options.maxDisable, plan.activeCount);
  }
  return seatRefusal(plan.counts, input.options.freeSeats);
}

function emptyCounts(): Record<ActionKind, number> {
  return Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as Record<ActionKind, number>;
}

/** A plan of no action. */
export function noActions(): Pick<Plan, 'actions' | 'byEmployee'> {
  const actions = new PlanActions();
  return { actions, byEmployee: actions.byEmployee };
}

function emptyPlan(input: PlanInput, activeCount: number): Plan {
  return {
    mode: input.mode,
    ...noActions(),
    counts: emptyCounts(),
    unsupported: [],
    errors: [],
    notes: [],
    activeCount,
    maxDisable: resolveMaxDisable(input.options.maxDisable, activeCount),
    unchanged: 0,
    repairs: 0,
    drift: [],
    platform: platformLine(input),
  };
}

function platformLine(input: PlanInput): string {
  const view = input.platform;
  if (view === undefined) return `platform state not read: ${input.platformNote ?? 'none given'}; planned from what trainsync applied, so changes made on the platform by hand are not seen`;
  const from = view.source === 'api' ? 'read now through GET users' : `training.users, refreshed ${view.asOf.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `platform state: ${view.byId.size} accounts (${from})${view.complete ? '' : '; some records could not be read, so no account is taken as deleted'}; group membership cannot be read through the API, so memberships are planned from what trainsync applied`;
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
 *
 * With `platform` (the accounts as the platform shows them now), access is compared
 * with the platform rather than the applied state, and differences are repaired, each
 * action saying why (`repair`): a leaver with access is disabled again; an account
 * deleted outside trainsync is created again with its groups (within the seat guard);
 * an active employee whose access was removed is enabled again (policy `restore`) or
 * reported (`keep`). Group membership cannot be read through the API, so it is planned
 * from the applied state alone. Repairs count in the disable and seat guards.
 */
export function planProvisioning(input: PlanInput): Plan {
  const file = input.file ?? 'feed';
  const b: Builder = { actions: new PlanActions(), unsupported: [], errors: [], notes: [], drift: [] };
  const ctx: Context = { view: input.platform, leaverSince: input.leaverSince, accessRemoved: input.options.accessRemoved ?? 'restore', reassertGroups: input.options.reassertGroups ?? false, file };
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

  /** Applied employees the rows list (a 300,000-row first run lists none: no set of every row's id). */
  const listed = new Set<string>();
  /** Applied employees whose e-mail a feed row claims under another id: never leavers. */
  const claimed = new Set<string>();
  let unchanged = 0;
  for (const row of input.rows) {
    const applied = appliedById.get(row.employeeId);
    if (applied !== undefined) {
      listed.add(row.employeeId);
      if (!planKnown(b, row, applied, ctx)) unchanged += 1;
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
      .filter((a) => !listed.has(a.employeeId) && !claimed.has(a.employeeId)
        && !input.invalidEmployeeIds.has(a.employeeId) && !input.invalidEmails.has(a.email.toLowerCase()))
      .sort((x, y) => (x.employeeId < y.employeeId ? -1 : x.employeeId > y.employeeId ? 1 : 0));
    for (const a of leavers) {
      if (!observe(ctx.view, a).hasAccess) continue;
      const repair = a.active ? undefined : leaverReason(ctx.view!, a.employeeId, ctx, false);
      push(b, {
        kind: 'disable',
        employeeId: a.employeeId,
        email: a.email.toLowerCase(),
        platformUserId: a.platformUserId,
        seq: 0,
        baseVersion: a.version ?? 0,
        before: ACTIVE_YES,
        after: ACTIVE_NO,
        ...(repair ? { repair } : {}),
      }, 'kind-first');
    }
  }

  const actions = b.actions;
  const counts = emptyCounts();
  let repairs = 0;
  for (let i = 0; i < actions.length; i += 1) {
    counts[actions.kindAt(i)] += 1;
    if (actions.hasRepairAt(i)) repairs += 1;
  }
  const base: Omit<Plan, 'refused'> = {
    mode: input.mode,
    actions,
    byEmployee: actions.byEmployee,
    counts,
    unsupported: b.unsupported,
    errors: b.errors,
    notes: b.notes,
    activeCount,
    maxDisable: resolveMaxDisable(input.options.maxDisable, activeCount),
    unchanged,
    repairs,
    drift: b.drift,
    platform: platformLine(input),
  };
  const refused = input.options.force ? undefined : refusal(base, input);
  return refused === undefined ? base : { ...base, refused };
}

/**
 * A delta plan of rows no feed reading produced (the last HR snapshot for `reconcile --fix`,
 * an IdP's change for SCIM): there are no rejected rows whose employees must be left alone.
 */
export function planDelta(input: Omit<PlanInput, 'invalidEmployeeIds' | 'invalidEmails' | 'mode'>): Plan {
  return planProvisioning({ ...input, invalidEmployeeIds: new Set(), invalidEmails: new Set(), mode: 'delta' });
}
