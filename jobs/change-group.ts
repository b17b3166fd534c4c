import { changeGroupPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOBS } from '../src/provisioning/apply/actions.ts';
import { setIdentityGroup } from '../src/provisioning/apply/identities-store.ts';
import { runUserAction } from '../src/provisioning/apply/run-action.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Adds a member to a group or removes one, then records the identity's groups and the
 * audit row together. Both calls answer 204 whether or not the user was a member, so
 * repeating one is harmless.
 */
export const changeGroup = defineJob({
  name: PROVISION_JOBS.changeGroup,
  enqueuedByName: true,
  queue: PROVISION_QUEUE,
  payload: changeGroupPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx) =>
    runUserAction(
      ctx,
      p,
      (userId) => (p.member ? ctx.platform.addToGroup(p.groupId, userId) : ctx.platform.removeFromGroup(p.groupId, userId)),
      (tx, userId) => setIdentityGroup(tx, p.employeeId, p.groupId, p.member, userId),
    ),
});
