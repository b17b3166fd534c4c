import type { JobContext } from '../../queue/job-context.ts';
import { isNotOffered, PlatformError } from '../../platform/errors.ts';
import type { PlatformUser } from '../../platform/schemas.ts';
import { asRole } from '../plan/adopt.ts';
import type { CreateUserPayload } from './actions.ts';
import { finishAction } from './actions-store.ts';
import { closeMembershipsOfOtherAccounts, releasePlatformUserId, upsertAccountIdentity } from './identities-store.ts';
import { runAction, type ActionOutcome } from './run-action.ts';

async function lookUp(ctx: JobContext, email: string): Promise<PlatformUser | undefined> {
  try {
    return await ctx.platform.findUserByEmail(email);
  } catch (error) {
    if (isNotOffered(error)) return undefined;
    throw error;
  }
}

/**
 * The create-user job's engine: a joiner's account. POST users returns no id, so the
 * id is learned by GET users?email= (else the feed's platform_user_id), or later in bulk
 * (`lookUp: 'later'`). EMAIL_IN_USE_ORG_CONNECTED means the account
 * already exists in this organisation (made by hand, or by an earlier attempt whose
 * record was lost): it is adopted, and given access back if it had none. That makes a
 * retry after a crash between the call and its record harmless. An account created
 * again after a deletion outside trainsync (`recreate`) starts with no recorded groups:
 * the plan adds the feed's groups after it.
 */
export function createUserAction(ctx: JobContext, p: CreateUserPayload): Promise<ActionOutcome> {
  return runAction(ctx, p.actionId, async () => {
    let adopted = false;
    try {
      await ctx.platform.createUser({
        email: p.account.email,
        firstName: p.account.firstName,
        lastName: p.account.lastName,
        role: p.account.role,
        organisationIdentifier: p.account.organisationIdentifier,
      });
    } catch (error) {
      if (!(error instanceof PlatformError && error.code === 'EMAIL_IN_USE_ORG_CONNECTED')) throw error;
      adopted = true;
    }
    // Deferred (a SCIM burst): the id is learned by one bulk pass afterwards (src/scim/resolve-ids.ts).
    const user = p.lookUp === 'later' && !adopted ? undefined : await lookUp(ctx, p.account.email);
    const platformUserId = user?.id ?? p.platformUserId;
    if (adopted && user && !user.hasAccess) await ctx.platform.enableUser(user.id);
    // An adopted account keeps its own names: the next plan reports any difference.
    const account = adopted && user
      ? { email: user.email, firstName: user.firstName, lastName: user.lastName, role: asRole(user.role), organisationIdentifier: user.organisationIdentifier }
      : { email: p.account.email, firstName: p.account.firstName, lastName: p.account.lastName, role: p.account.role, organisationIdentifier: p.account.organisationIdentifier };
    const org = ctx.org.slug;
    await ctx.scope.transaction(async (tx) => {
      const released = platformUserId ? await releasePlatformUserId(tx, platformUserId, p.employeeId) : [];
      if (released.length > 0) ctx.log.warn({ actionId: p.actionId, platformUserId, released }, 'another identity held this account id (its account is gone); cleared it');
      await upsertAccountIdentity(tx, { employeeId: p.employeeId, platformUserId, active: true, ...account, ...(p.recreate ? { resetGroups: true } : {}) });
      if (p.recreate) await closeMembershipsOfOtherAccounts(tx, p.employeeId, platformUserId);
      await finishAction(tx, p.actionId, { status: 'succeeded', after: { platformUserId, adopted, ...(p.lookUp === 'later' ? { lookUp: 'later' } : {}) } });
    });
    if (adopted) ctx.log.info({ actionId: p.actionId, platformUserId }, 'the account already existed in this organisation; adopted it');
    return { actionId: p.actionId, status: 'succeeded', platformUserId, adopted };
  });
}
