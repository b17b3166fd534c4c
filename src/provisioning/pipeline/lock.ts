import { orgScoped } from '../../queue/org-scope.ts';
import { withAdvisoryLock } from '../../warehouse/advisory-lock.ts';
import type { AdvisoryLocks } from '../../warehouse/lock-session.ts';
import type { OrgRef } from '../../warehouse/scope.ts';

/**
 * Serialises plan-and-enqueue of one organisation between every source (feeds, SCIM
 * batches, `reconcile --fix`, held plans decided), in any process on one database:
 * `provisionLock(org)`. Organisations plan side by side: their applied states, audit
 * rows and accounts are disjoint.
 */
export const PROVISION_LOCK = 'trainsync:provision';

/** The provisioning lock of the organisation of `scope` (`default` keeps the bare name). */
export function provisionLock({ org }: OrgRef): string {
  return orgScoped(org, PROVISION_LOCK);
}

/**
 * Runs `fn` under the organisation's lock, unless `held` (the caller holds it already: an
 * approval checks its plan and runs the pipeline in one hold) or a dry run (changes nothing).
 * Taking it twice in one call chain would wait for itself.
 */
export function underProvisionLock<T>(deps: { locks: AdvisoryLocks; scope: OrgRef }, skip: boolean, fn: () => Promise<T>): Promise<T> {
  return skip ? fn() : withAdvisoryLock(deps.locks, provisionLock(deps.scope), fn);
}
