import type { FeedRow } from '../provisioning/index.ts';

/**
 * What of a User's row the platform is told: the fields the planner acts on. Two rows with
 * the same platform state need the same platform actions; the rest (title, department and
 * the other attributes) reaches training.employees only.
 */
export function platformState(row: FeedRow): string {
  return JSON.stringify([row.employeeId, row.email, row.emailDisplay, row.firstName, row.lastName, row.status, row.groups, row.role, row.organisationIdentifier, row.platformUserId ?? null]);
}

/**
 * Whether a change of an employee whose actions are still queued needs no plan of its own:
 * it states the platform state of the version planned last, so the queued actions (that
 * plan's) bring the platform where it wants it. An identity provider's PATCH of a title
 * right after its create is one; a change of name, e-mail, access or groups is not.
 */
export function settledByQueuedActions(plannedState: string | null | undefined, row: FeedRow): boolean {
  return plannedState !== null && plannedState !== undefined && plannedState === platformState(row);
}
