import { changeGroupPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOB_NAMES } from '../src/provisioning/action-payloads.ts';
import { finishAction } from '../src/provisioning/audit.ts';
import { setIdentityGroup } from '../src/provisioning/identities.ts';
import { needsIdentity, resolveUserId, runAction, type ActionOutcome } from '../src/provisioning/run-action.ts';
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
    runAction(ctx, p.actionId, async () => {
      const user = await resolveUserId(ctx, p.employeeId, p.email, p.platformUserId);
      if (!user) return needsIdentity(ctx, p.actionId, p.employeeId, p.email);
      if (p.member) await ctx.platform.addToGroup(p.groupId, user.platformUserId);
      else await ctx.platform.removeFromGroup(p.groupId, user.platformUserId);
      await ctx.db.transaction().execute(async (trx) => {
        await setIdentityGroup(trx, p.employeeId, p.groupId, p.member, user.platformUserId);
        await finishAction(trx, p.actionId, { status: 'succeeded', after: { platformUserId: user.platformUserId } });
      });
      return { actionId: p.actionId, status: 'succeeded', platformUserId: user.platformUserId };
    }),
});
