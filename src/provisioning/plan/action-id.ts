import type { ActionKind } from './action.ts';

export interface ActionIdParts {
  kind: ActionKind;
  employeeId: string;
  email: string;
  groupId?: string;
  baseVersion: number;
}

/**
 * The deterministic id of an action: the BullMQ job id and the audit row's key.
 *
 * - `create-user:<email>`: e-mails are unique across the platform, so one account per
 *   e-mail, whatever feed asks for it. An account created again after it was deleted
 *   outside trainsync adds the applied version: `create-user:<email>:v<version>`.
 * - `<kind>:<employeeId>[:<groupId>]:v<version>`: the kind names the transition
 *   (disable = active → inactive), the version is the applied state the plan started
 *   from. The same feed planned twice before anything is applied gives the same ids,
 *   so nothing doubles; a later disable/enable/disable is planned from a newer version,
 *   so it is a new action rather than taken for a retry of the first.
 *
 * The feed's hash is deliberately not part of the id: two different feeds that both
 * ask for the same pending change must not enqueue it twice.
 */
export function actionId(action: ActionIdParts): string {
  // Joined rather than a template literal: a template makes a tree of cons strings (some 150
  // bytes an id), a join one flat string; a first run plans an id for each of ~900,000 actions.
  if (action.kind === 'create-user') {
    // Creating again an account deleted outside trainsync is a new action, not a retry of the first create.
    return action.baseVersion > 0 ? ['create-user', action.email.toLowerCase(), `v${action.baseVersion}`].join(':') : ['create-user', action.email.toLowerCase()].join(':');
  }
  return action.groupId === undefined
    ? [action.kind, action.employeeId, `v${action.baseVersion}`].join(':')
    : [action.kind, action.employeeId, action.groupId, `v${action.baseVersion}`].join(':');
}
