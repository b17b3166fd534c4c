import type { FeedRole } from '../feed/types.ts';

/** One action of a plan, and the kinds and states it is made of (plan/types.ts re-exports these). */

export const ACTION_KINDS = ['create-user', 'enable', 'disable', 'add-to-group', 'remove-from-group'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

/** The part of an employee's state an action moves; JSON-serialisable. */
export interface ActionState {
  active?: boolean;
  member?: boolean;
  email?: string;
  firstName?: string;
  lastName?: string;
  role?: FeedRole;
  organisationIdentifier?: string;
}

export interface PlannedAction {
  /** Deterministic: see `actionId`. */
  id: string;
  kind: ActionKind;
  employeeId: string;
  /** Lower case (identity); the display form for a new account is `after.email`. */
  email: string;
  groupId?: string;
  /** The platform user when known (applied state first, else the feed's platform_user_id). */
  platformUserId: string | null;
  /** Order within one employee: 0 = create/enable/disable, 1 = group changes after it. */
  seq: number;
  /** The applied-state version the action was planned from. */
  baseVersion: number;
  before: ActionState | null;
  after: ActionState;
  /**
   * Set when the action repairs drift: the platform differs from what trainsync applied
   * (changed by hand, or by another tool). Says what the platform shows and what HR says.
   */
  repair?: string;
}
