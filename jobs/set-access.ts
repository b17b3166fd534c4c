import { setAccessPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOB_NAMES } from '../src/provisioning/action-payloads.ts';
import { setIdentityActive } from '../src/provisioning/identities.ts';
import { runUserAction, type ActionOutcome } from '../src/provisioning/run-action.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * Disables a leaver or enables a returner. Both calls answer 204 whatever the current
 * state, so a retry (or a crash before the record) repeats nothing harmful.
 */
export const setAccess = defineJob({
  name: PROVISION_JOB_NAMES.setAccess,
  queue: PROVISION_QUEUE,
  payload: setAccessPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx): Promise<ActionOutcome> =>
    runUserAction(
      ctx,
      p,
      (userId) => (p.active ? ctx.platform.enableUser(userId) : ctx.platform.disableUser(userId)),
      (trx, userId) => setIdentityActive(trx, p.employeeId, p.active, userId),
    ),
});
