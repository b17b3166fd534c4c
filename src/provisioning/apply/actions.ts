import { z } from 'zod';
import { orgScoped } from '../../queue/org-scope.ts';
import type { PlannedAction } from '../plan/types.ts';
import type { OrgRef } from '../../warehouse/scope.ts';

/**
 * The payloads of the provisioning jobs, and how a planned action becomes one. The
 * job id is the action id, so the same action enqueued twice is one job.
 */

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a lower-case GUID');

const common = {
  actionId: z.string().min(1),
  employeeId: z.string().min(1),
  /** Lower case: the identity key; also the `userIdentifier` fallback. */
  email: z.string().min(3),
  /** Known when planned (applied state or the feed's platform_user_id); else looked up. */
  platformUserId: uuid.nullable(),
  feedHash: z.string().nullable(),
};

export const createUserPayloadSchema = z.object({
  ...common,
  account: z.object({
    /** As the HR export wrote it: what the platform stores. */
    email: z.string().min(3),
    firstName: z.string().min(1),
    lastName: z.string().min(1),
    role: z.enum(['USER', 'ADMIN']),
    organisationIdentifier: z.string().min(1),
  }),
  /** The employee's account was deleted outside trainsync: the groups on record went with it. */
  recreate: z.boolean().optional(),
  /**
   * `now`: GET users?email= right after the POST, for the id (POST users returns none).
   * `later`: no lookup; the id is resolved in bulk afterwards (a SCIM burst: one page of 50
   * instead of 50 lookups; src/scim/resolve-ids.ts). Later actions look it up themselves.
   */
  lookUp: z.enum(['now', 'later']).default('now'),
});
export type CreateUserPayload = z.output<typeof createUserPayloadSchema>;

export const setAccessPayloadSchema = z.object({ ...common, active: z.boolean() });
export type SetAccessPayload = z.output<typeof setAccessPayloadSchema>;

export const changeGroupPayloadSchema = z.object({ ...common, groupId: uuid, member: z.boolean() });
export type ChangeGroupPayload = z.output<typeof changeGroupPayloadSchema>;

export const setPasswordPayloadSchema = z.object({
  actionId: z.string().min(1),
  /** Lower case; also the AAD the secret is bound to. */
  email: z.string().min(3),
  /**
   * Only in jobs queued by an earlier version: `encryptSecret(TRAINSYNC_SECRET_KEY, password, email)`.
   * Now the encrypted password is kept in Redis under the action's own key (password-secret.ts),
   * never in job data, which bull-board shows.
   */
  secret: z
    .string()
    .regex(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'an encrypted secret (v1.<iv>.<tag>.<ciphertext>)')
    .optional(),
});
export type SetPasswordPayload = z.output<typeof setPasswordPayloadSchema>;

/** The provisioning jobs, enqueued by name by the planner and `provision --password`. */
export const PROVISION_JOBS = {
  createUser: 'create-user',
  setPassword: 'set-password',
  changeGroup: 'change-group',
  setAccess: 'set-access',
} as const;

/** Attempts of a provisioning job (transient errors only; documented 400 codes fail at once). */
export const PROVISION_ATTEMPTS = 5;

export interface ActionJob {
  name: (typeof PROVISION_JOBS)[keyof typeof PROVISION_JOBS];
  data: CreateUserPayload | SetAccessPayload | ChangeGroupPayload;
}

/** The job that carries out a planned action. */
export function jobForAction(action: PlannedAction, feedHash: string | null): ActionJob {
  const base = { actionId: action.id, employeeId: action.employeeId, email: action.email, platformUserId: action.platformUserId, feedHash };
  switch (action.kind) {
    case 'create-user': {
      const a = action.after;
      const account = {
        email: a.email ?? action.email,
        firstName: a.firstName ?? '',
        lastName: a.lastName ?? '',
        role: a.role ?? 'USER',
        organisationIdentifier: a.organisationIdentifier ?? action.employeeId,
      };
      return { name: PROVISION_JOBS.createUser, data: createUserPayloadSchema.parse({ ...base, account, ...(action.baseVersion > 0 ? { recreate: true } : {}) }) };
    }
    case 'enable':
    case 'disable':
      return { name: PROVISION_JOBS.setAccess, data: setAccessPayloadSchema.parse({ ...base, active: action.kind === 'enable' }) };
    case 'add-to-group':
    case 'remove-from-group':
      return {
        name: PROVISION_JOBS.changeGroup,
        data: changeGroupPayloadSchema.parse({ ...base, groupId: action.groupId, member: action.kind === 'add-to-group' }),
      };
  }
}

/**
 * The BullMQ job id of an action. BullMQ refuses ':' in custom ids (its own key
 * separator), which action ids use, so ':' becomes '%3A' (and '%' becomes '%25', so
 * two different action ids never share a job id). Action ids repeat across
 * organisations (`disable:E1:v3` in two HR systems), and all share one queue: the id is
 * scoped as `<org>.<id>`, the organisation of the handle given (`default` keeps the bare id, so queued jobs of a
 * single-organisation deployment keep theirs).
 */
export function jobIdForAction({ org }: OrgRef, actionId: string): string {
  return orgScoped(org, actionId.replace(/%/g, '%25').replace(/:/g, '%3A'));
}
