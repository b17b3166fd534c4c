import { planUsers } from './batch.ts';
import type { ChangeDeps, ChangeOptions, ChangeOutcome } from './change.ts';
import { reactivateUsers } from './store.ts';

/**
 * A held SCIM burst decided by a person (src/provisioning/approve-held-plan.ts, under the
 * provisioning lock). Approving plans the held people's Users as they are now, their
 * disables let through once; rejecting drops the deactivations: trainsync's record of
 * them goes back to active (training.employees too), while the identity provider still
 * shows them inactive until it pushes them again.
 */

export function approveHeldUsers(deps: ChangeDeps, scimIds: readonly string[], approving: NonNullable<ChangeOptions['approving']>): Promise<ChangeOutcome> {
  return planUsers(deps, scimIds, { approving, locked: true });
}

export async function dropHeldUsers(deps: ChangeDeps, scimIds: readonly string[]): Promise<ChangeOutcome> {
  if (scimIds.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0 };
  await reactivateUsers(deps.scope, scimIds);
  return planUsers(deps, scimIds, { locked: true });
}
