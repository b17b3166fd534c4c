import type { FeedRole, RowList } from '../feed/types.ts';
import type { MaxDisable } from '../../settings/max-disable.ts';
import type { ActionKind, PlannedAction } from './action.ts';
import type { PlanActions, PlanEmployees } from './plan-actions.ts';

export { ACTION_KINDS, type ActionKind, type ActionState, type PlannedAction } from './action.ts';

/**
 * Types of the provisioning plan: what must change on the platform so its accounts
 * match the HR feed, given what trainsync last applied.
 *
 * Glossary
 * - applied state: per employee, what trainsync last made true on the platform
 *                  (`trainsync.identities`); `version` goes up by one on every write.
 * - joiner / leaver / returner / mover: new employee / employee to disable / employee
 *                  to enable again / employee whose groups change.
 * - action:        one platform change for one employee, with a deterministic id.
 */

export type PlanMode = 'full' | 'delta';

export interface AppliedEmployee {
  employeeId: string;
  email: string;
  platformUserId: string | null;
  firstName: string | null;
  lastName: string | null;
  active: boolean;
  groups: string[];
  /** Unknown (undefined/null) means role changes cannot be detected. */
  role?: FeedRole | null;
  organisationIdentifier?: string | null;
  /** Bumped by every write of this employee's applied state; 0 / undefined = never written. */
  version?: number;
}

/**
 * An account as the platform shows it now (GET users, or training.users when that was
 * refreshed recently enough). Group membership is not part of it: the vendor's API
 * offers no read of memberships (GET users has no groups, GET groups lists courses).
 */
export interface PlatformAccount {
  id: string;
  /** Lower case. */
  email: string;
  hasAccess: boolean;
}

/** The platform's current view of its accounts, as the planner's input. */
export interface PlatformView {
  byId: ReadonlyMap<string, PlatformAccount>;
  /** Lower-case e-mail → account. */
  byEmail: ReadonlyMap<string, PlatformAccount>;
  /**
   * Whether every account the plan looks at was read (all of them, or each one a delta
   * touches). Only then is an account missing from the view taken as deleted on the
   * platform (a quarantined record would otherwise look deleted).
   */
  complete: boolean;
  /** `api` (GET users, just now) or `warehouse` (training.users, refreshed at `asOf`). */
  source: 'api' | 'warehouse';
  asOf: Date;
}

/**
 * What to do when an active employee's access was removed on the platform outside
 * trainsync: `restore` (enable it again, as Entra ID provisioning does by default) or
 * `keep` (report it as drift and leave the account disabled).
 */
export type AccessRemovedPolicy = 'restore' | 'keep';

/** Drift seen on the platform that the plan does not repair, with why not. */
export interface DriftNote {
  employeeId: string;
  email: string;
  message: string;
}

export type UnsupportedField = 'email' | 'first_name' | 'last_name' | 'role' | 'organisation_identifier' | 'platform_user_id' | 'employee_id';

/** A change the API cannot make (no update endpoint in the spec); reported, never enqueued. */
export interface UnsupportedChange {
  employeeId: string;
  email: string;
  line: number;
  field: UnsupportedField;
  before: string | null;
  after: string | null;
  message: string;
}

/** A feed row that is valid on its own but cannot be planned (a joiner without names). */
export interface PlanRowError {
  line: number;
  employeeId: string;
  email: string;
  field: 'first_name' | 'last_name';
  message: string;
}

/** Information only (e.g. an inactive joiner is not created). */
export interface PlanNote {
  line: number;
  employeeId: string;
  email: string;
  message: string;
}

export interface PlanRefusal {
  /**
   * `feed-errors` (the file itself could not be read) cannot be forced; `empty-feed` and
   * `feed-shrink` (the shrink guard, before planning) only by `--allow-shrink`; `confirm`: a
   * mass disable forced or approved without the typed count of the disables it applies now.
   */
  reason: 'max-disable' | 'seats' | 'feed-errors' | 'empty-feed' | 'feed-shrink' | 'confirm';
  message: string;
}

export interface Plan {
  mode: PlanMode;
  /** Held by column (plan-actions.ts): JSON shows them as an array of actions. */
  actions: PlanActions;
  /** Each employee's actions, in plan order (a view of `actions`; JSON shows an object keyed by employee id). */
  byEmployee: PlanEmployees;
  counts: Record<ActionKind, number>;
  unsupported: UnsupportedChange[];
  errors: PlanRowError[];
  notes: PlanNote[];
  /** Set when nothing may be enqueued (and `force` was not given). */
  refused?: PlanRefusal;
  /** Active employees in the applied state: the base of a percentage limit. */
  activeCount: number;
  /** The disable limit that was applied. */
  maxDisable: number;
  /** Feed rows that need no action. */
  unchanged: number;
  /** Actions that repair drift (each has `repair`); counted in `counts` and the guards too. */
  repairs: number;
  /** Drift seen but not repaired (policy `keep`, a leaver's account deleted…). */
  drift: DriftNote[];
  /** Where the platform's state came from, or why it could not be read (then drift is not seen). */
  platform: string;
}

/** How many disables a plan may hold (src/settings/max-disable.ts parses it for the settings and the commands). */
export type { MaxDisable };

export interface PlanOptions {
  /** Default: the larger of 5 and 10% of the active applied employees. */
  maxDisable?: MaxDisable | undefined;
  /** Enqueue even when a limit is exceeded. */
  force: boolean;
  /** Free seats on the platform; undefined = unknown (no seat check). */
  freeSeats?: number | undefined;
  /** Default `restore`. */
  accessRemoved?: AccessRemovedPolicy | undefined;
  /**
   * Add again every group membership the feed wants and the applied state already has
   * (`reconcile --fix --reassert-groups`): the API cannot read memberships, so this is
   * the only way to repair one removed by hand. One write per membership.
   */
  reassertGroups?: boolean | undefined;
}

export interface PlanInput {
  rows: RowList;
  invalidEmployeeIds: ReadonlySet<string>;
  /** Lower case. */
  invalidEmails: ReadonlySet<string>;
  applied: Iterable<AppliedEmployee>;
  mode: PlanMode;
  options: PlanOptions;
  /** The feed's file name, for messages. */
  file?: string;
  /**
   * The platform's accounts as they are now. Without it the plan compares the feed with
   * the applied state only, and cannot see changes made on the platform by hand.
   */
  platform?: PlatformView | undefined;
  /** Why there is no `platform` (shown in the plan). */
  platformNote?: string | undefined;
  /** employee id → since when HR says they left (YYYY-MM-DD), for the repair reasons. */
  leaverSince?: ReadonlyMap<string, string> | undefined;
  /**
   * `FeedReadResult.fileErrors` (passed along when the read result is spread in). Any
   * file error means the rows are not the feed, so nothing is planned: in full mode an
   * unreadable file would otherwise look like every employee leaving.
   */
  fileErrors?: readonly string[];
}
