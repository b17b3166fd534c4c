import type { ScimUserRow } from './store.ts';

/**
 * The rows this process wrote last, by SCIM id, so that a change right after a write (an
 * identity provider's PATCH right after its create) is made without reading the User first:
 * one round trip instead of two. Safe because the write is made over the version remembered
 * and Postgres takes it only if the row is still at that version (store.ts updateUser), and
 * every change of a User's content moves its version (a write elsewhere: another request,
 * another worker, a Group's members, a held plan dropped). When it is not taken, or the
 * remembered row leads to a refusal (users.ts writeUser), the User is read and the change
 * made again as before. Bounded: the oldest are forgotten.
 */
export interface RecentUsers {
  get(scimId: string): ScimUserRow | undefined;
  remember(row: ScimUserRow): void;
  forget(scimId: string): void;
}

/** Rows kept at most: an identity provider's PATCH follows its create within seconds, and a row is ~1 KB. */
const MAX_ROWS = 5_000;

export function createRecentUsers(max = MAX_ROWS): RecentUsers {
  const rows = new Map<string, ScimUserRow>();
  return {
    get: (scimId) => rows.get(scimId.toLowerCase()),
    remember(row) {
      const key = row.scim_id.toLowerCase();
      // Deleted and set again: the Map's order is then the order of the last writes.
      rows.delete(key);
      rows.set(key, row);
      if (rows.size > max) rows.delete(rows.keys().next().value!);
    },
    forget: (scimId) => void rows.delete(scimId.toLowerCase()),
  };
}
