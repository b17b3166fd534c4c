import { type Approving, heldRefs, type HeldSource, pipelineDeps, type ProvisionDeps } from '../provisioning/index.ts';
import { planUsers } from './batch.ts';
import type { ChangeDeps, ChangeOutcome } from './change.ts';
import { reactivateUsers } from './store.ts';

/**
 * A held SCIM burst decided by a person (src/provisioning/approve-held-plan.ts, under the
 * provisioning lock, through the registry of held sources). Approving plans the held
 * people's Users as they are now, their disables let through once; rejecting drops the
 * deactivations: trainsync's record of them goes back to active (training.employees too),
 * while the identity provider still shows them inactive until it pushes them again.
 */

export function approveHeldUsers(deps: ChangeDeps, scimIds: readonly string[], approving: Approving): Promise<ChangeOutcome> {
  return planUsers(deps, scimIds, { approving, locked: true });
}

export async function dropHeldUsers(deps: ChangeDeps, scimIds: readonly string[]): Promise<ChangeOutcome> {
  if (scimIds.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0 };
  await reactivateUsers(deps.scope, scimIds);
  return planUsers(deps, scimIds, { locked: true });
}

/** SCIM's deps for a decision: the approved people pass the guard, so its limit does not matter here. */
function decisionDeps(deps: ProvisionDeps): ChangeDeps {
  return { ...pipelineDeps(deps), scimMaxDisable: undefined };
}

/** A SCIM burst's entry in the registry of held sources (registered by the app's composition). */
export const heldScimBurst: HeldSource = {
  approve: async (deps, plan, approving) => {
    const outcome = await approveHeldUsers(decisionDeps(deps), heldRefs(plan), approving);
    if (outcome.refused) return { applied: false, refused: outcome.refused };
    return { applied: true, enqueued: outcome.enqueued, waitingOn: [], pending: outcome.pending };
  },
  reject: async (deps, plan) => ({ pending: (await dropHeldUsers(decisionDeps(deps), heldRefs(plan))).pending }),
};
