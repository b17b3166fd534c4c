/**
 * kysely row types of the SCIM tables in schema `trainsync` (sql/migrations/0010_scim.sql is
 * the source of truth), beside their stores (store.ts, groups.ts). They join the warehouse's
 * `Database` by declaration merging (below), so storage imports no wing.
 */
import type { ColumnType } from 'kysely';
import type { GeneratedInstant as DefaultInstant, NullableInstant } from '../warehouse/column-types.ts';

export interface ScimUsersTable {
  scim_id: string;
  /** The organisation whose SCIM path and token stated the User. */
  org: string;
  employee_id: string;
  user_name: string;
  external_id: string | null;
  active: boolean;
  /** jsonb: parsed on read; written as a JSON string. */
  resource: ColumnType<Record<string, unknown>, string, string>;
  groups: ColumnType<string[], string[] | undefined, string[]>;
  pending: ColumnType<boolean, boolean | undefined, boolean>;
  version: ColumnType<number, number | undefined, number>;
  /** The platform state (src/scim/platform-state.ts) of the version last planned; null until one is. */
  planned_state: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: DefaultInstant;
  updated_at: DefaultInstant;
  deleted_at: NullableInstant;
  /** Set when the User's change could not be planned after its 2xx (sql/migrations/0022_scim_quarantine.sql); cleared by its next write. */
  quarantined_at: NullableInstant;
  quarantine_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ScimGroupsTable {
  org: string;
  group_id: string;
  display_name: string;
  external_id: string | null;
  created_at: DefaultInstant;
}

export interface ScimTables {
  'trainsync.scim_users': ScimUsersTable;
  'trainsync.scim_groups': ScimGroupsTable;
}

declare module '../warehouse/database.ts' {
  interface Database extends ScimTables {}
}
