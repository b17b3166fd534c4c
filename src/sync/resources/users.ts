import { USERS } from '../../platform/listings.ts';
import type { PlatformUser } from '../../platform/schemas.ts';
import type { SnapshotResource } from './resource.ts';

/**
 * The user dimension from the vendor-documented GET users. The seed spec lacks that
 * endpoint, so a platform without it records "not available" and the job succeeds.
 */
export const users: SnapshotResource<PlatformUser> = {
  name: 'users',
  kind: 'snapshot',
  cron: '0 2 * * *',
  endpoint: USERS,
  table: {
    table: 'training.users',
    key: ['user_id'],
    columns: [
      ['email', 'text'],
      ['first_name', 'text'],
      ['last_name', 'text'],
      ['role', 'text'],
      ['organisation_identifier', 'text'],
      ['has_access', 'boolean'],
    ],
    row: (u) => ({
      user_id: u.id,
      email: u.email,
      first_name: u.firstName,
      last_name: u.lastName,
      role: u.role,
      organisation_identifier: u.organisationIdentifier,
      has_access: u.hasAccess,
    }),
  },
  whenNotOffered: (status) => `not available (GET users answered ${status})`,
};
