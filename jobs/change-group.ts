import { changeGroupPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOB_NAMES } from '../src/provisioning/action-payloads.ts';
import { setIdentityGroup } from '../src/provisioning/identities.ts';
import { runUserAction, type ActionOutcome } from '../src/provisioning/run-action.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Adds a member to a group or removes one. Both answer 204 whether or not the user
 * was a member, so repeating one is harmless.
 */
export const changeGroup = defineJob({
  name: PROVISION_JOB_NAMES.changeGroup,
  queue: PROVISION_QUEUE,
  payload: changeGroupPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx): Promise<ActionOutcome> =>
    runUserAction(
      ctx,
      p,
      (userId) => (p.member ? ctx.platform.addToGroup(p.groupId, userId) : ctx.platform.removeFromGroup(p.groupId, userId)),
      (trx, userId) => setIdentityGroup(trx, p.employeeId, p.groupId, p.member, userId),
    ),
});
