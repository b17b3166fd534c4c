import type { PlatformUser } from '../../platform/schemas.ts';
import type { RowList } from '../feed/types.ts';
import type { AppliedEmployee } from './types.ts';

/**
 * Adoption: on the first provisioning run against an organisation that already has
 * users, feed employees whose account exists are taken as known identities (with the
 * account's own state), so the plan does not try to create them again. Group
 * membership cannot be read through the API, so adopted employees start with no
 * groups and the plan adds their listed groups once (adding is idempotent).
 */

/** The platform's role as the feed spells it; anything else is no role. */
export function asRole(role: string | null | undefined): 'USER' | 'ADMIN' | null {
  return role === 'USER' || role === 'ADMIN' ? role : null;
}

/**
 * Matches feed rows the applied state does not know to platform accounts: by e-mail
 * (case-insensitive), else by organisationIdentifier = employee_id (or the row's own
 * organisation_identifier). Pure. An account is adopted once, and never when its
 * e-mail or id already belongs to a known identity or to another feed row.
 */
export function adoptExistingAccounts(rows: RowList, applied: readonly AppliedEmployee[], users: readonly PlatformUser[]): AppliedEmployee[] {
  const knownIds = new Set(applied.map((a) => a.employeeId));
  const knownEmails = new Set(applied.map((a) => a.email.toLowerCase()));
  const knownUsers = new Set(applied.flatMap((a) => (a.platformUserId ? [a.platformUserId] : [])));
  const byEmail = new Map<string, PlatformUser>();
  const byOrgId = new Map<string, PlatformUser>();
  for (const user of users) {
    byEmail.set(user.email.toLowerCase(), user);
    if (user.organisationIdentifier) byOrgId.set(user.organisationIdentifier, user);
  }
  // The feed's e-mails that are accounts' e-mails: the only ones asked about below (a set of
  // every row's would be 300,000 strings for a first run of a large feed).
  const feedEmails = new Set<string>();
  for (const row of rows) if (byEmail.has(row.email)) feedEmails.add(row.email);
  const taken = new Set<string>();
  const adopted: AppliedEmployee[] = [];
  for (const row of rows) {
    if (knownIds.has(row.employeeId) || knownEmails.has(row.email)) continue;
    const user = byEmail.get(row.email) ?? byOrgId.get(row.employeeId) ?? byOrgId.get(row.organisationIdentifier);
    if (!user || taken.has(user.id) || knownUsers.has(user.id)) continue;
    const email = user.email.toLowerCase();
    // Matched by employee id but the account's e-mail is another row's (or a known one's): leave it to a person.
    if (email !== row.email && (feedEmails.has(email) || knownEmails.has(email))) continue;
    taken.add(user.id);
    adopted.push({
      employeeId: row.employeeId,
      email: user.email,
      platformUserId: user.id,
      firstName: user.firstName,
      lastName: user.lastName,
      active: user.hasAccess,
      groups: [],
      role: asRole(user.role),
      organisationIdentifier: user.organisationIdentifier,
      version: 1,
    });
  }
  return adopted;
}
