import type pg from 'pg';
import type { PlatformUser } from '../platform/schemas.ts';
import { dedupeById, type LoadCounts } from './load-counts.ts';
import { markMissingListed, touchListed, upsertListed, type ListedTable } from './upsert-listed.ts';

const USERS: ListedTable = {
  table: 'training.users',
  idColumn: 'user_id',
  columns: [
    ['email', 'text'],
    ['first_name', 'text'],
    ['last_name', 'text'],
    ['role', 'text'],
    ['organisation_identifier', 'text'],
    ['has_access', 'boolean'],
  ],
};

/** Writes platform users (from `GET users`); stamps last_seen_at for markMissingUsers. */
export async function upsertUsers(client: pg.PoolClient, org: string, users: readonly PlatformUser[], seenAt: Date): Promise<LoadCounts> {
  const batch = dedupeById(users, (u) => u.id);
  if (batch.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  const written = await upsertListed(
    client,
    org,
    USERS,
    batch.map((u) => ({
      user_id: u.id,
      email: u.email,
      first_name: u.firstName,
      last_name: u.lastName,
      role: u.role,
      organisation_identifier: u.organisationIdentifier,
      has_access: u.hasAccess,
    })),
    seenAt,
  );
  await touchListed(client, org, USERS, batch.map((u) => u.id), [], seenAt);
  const inserted = written.inserted.size;
  const updated = written.updated.size;
  return { inserted, updated, unchanged: batch.length - inserted - updated };
}

/** After a complete, unfiltered user listing stamped with `seenAt`: marks users it did not include. */
export async function markMissingUsers(client: pg.PoolClient, org: string, seenAt: Date): Promise<number> {
  return markMissingListed(client, org, USERS, seenAt);
}
