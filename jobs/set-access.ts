import { setAccessPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOB_NAMES } from '../src/provisioning/action-payloads.ts';
import { finishAction } from '../src/provisioning/audit.ts';
import { setIdentityActive } from '../src/provisioning/identities.ts';
import { needsIdentity, resolveUserId, runAction, type ActionOutcome } from '../src/provisioning/run-action.ts';
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
    runAction(ctx, p.actionId, async () => {
      const user = await resolveUserId(ctx, p.employeeId, p.email, p.platformUserId);
      if (!user) return needsIdentity(ctx, p.actionId, p.employeeId, p.email);
      if (p.active) await ctx.platform.enableUser(user.platformUserId);
      else await ctx.platform.disableUser(user.platformUserId);
      await ctx.db.transaction().execute(async (trx) => {
        await setIdentityActive(trx, p.employeeId, p.active, user.platformUserId);
        await finishAction(trx, p.actionId, { status: 'succeeded', after: { platformUserId: user.platformUserId } });
      });
      return { actionId: p.actionId, status: 'succeeded', platformUserId: user.platformUserId };
    }),
});
