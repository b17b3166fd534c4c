/**
 * kysely row types of the tables provisioning applies to (sql/migrations/0003_provisioning.sql
 * and 0006_groups.sql are the source of truth), beside their stores (identities-store.ts,
 * actions-store.ts, feeds-store.ts): `trainsync.identities`, `feeds`, `provisioning_actions`
 * and its audit view, and `training.group_members` (the memberships trainsync applied). They
 * join the warehouse's `Database` by declaration merging (below), so storage imports no wing.
 * int8 reads as number (pool.ts installs the parser); uuid as lower-case strings.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Instant, GeneratedInstant as DefaultInstant, NullableInstant } from '../../warehouse/column-types.ts';

/** jsonb: parsed on read; written as a JSON string. */
type Jsonb = ColumnType<unknown, string, string>;
type NullableJsonb = ColumnType<unknown, string | null | undefined, string | null>;

export type ProvisioningActionStatus = 'planned' | 'queued' | 'succeeded' | 'failed' | 'needs-identity' | 'skipped';
/** The sources of the provisioning pipeline (src/provisioning/pipeline). */
export type ProvisioningSource = 'feed' | 'scim' | 'reconcile';
export type ProvisioningActionKind = 'create-user' | 'enable' | 'disable' | 'add-to-group' | 'remove-from-group' | 'set-password';

/** The last applied state per employee, and the employee's identity. */
export interface IdentitiesTable {
  /** The organisation's slug; the key is (org, employee_id). */
  org: string;
  employee_id: string;
  email: string;
  platform_user_id: string | null;
  first_name: string | null;
  last_name: string | null;
  role: 'USER' | 'ADMIN' | null;
  organisation_identifier: string | null;
  active: boolean;
  groups: ColumnType<string[], string[] | undefined, string[]>;
  /** Bump on every write: `version = version + 1`. */
  version: ColumnType<number, number | undefined, number>;
  created_at: DefaultInstant;
  updated_at: DefaultInstant;
}

export interface FeedsTable {
  id: Generated<number>;
  org: string;
  hash: string;
  path: string;
  format: 'csv' | 'jsonl';
  mode: 'full' | 'delta';
  dry_run: ColumnType<boolean, boolean | undefined, boolean>;
  rows: number;
  errors: number;
  actions: ColumnType<number, number | undefined, number>;
  refused: string | null;
  created_at: DefaultInstant;
}

export interface ProvisioningActionsTable {
  id: Generated<number>;
  /** Action ids are unique per organisation: (org, action_id). */
  org: string;
  action_id: string;
  employee_id: string;
  email: string;
  kind: ProvisioningActionKind;
  group_id: string | null;
  seq: ColumnType<number, number | undefined, number>;
  before: NullableJsonb;
  after: ColumnType<unknown, string | undefined, string>;
  status: ColumnType<ProvisioningActionStatus, ProvisioningActionStatus | undefined, ProvisioningActionStatus>;
  error_code: string | null;
  error_message: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  feed_hash: string | null;
  /** Which source planned the action (null: a password change, no source's). */
  source: ColumnType<ProvisioningSource | null, ProvisioningSource | null | undefined, ProvisioningSource | null>;
  /** Why: the row or statement that asked for it, or the drift it repairs. */
  reason: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: DefaultInstant;
  updated_at: DefaultInstant;
  finished_at: NullableInstant;
}

/** Read-only view `trainsync.provisioning_audit`. */
export interface ProvisioningAuditView {
  id: number;
  action_id: string;
  employee_id: string;
  email: string;
  kind: ProvisioningActionKind;
  group_id: string | null;
  status: ProvisioningActionStatus;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  before: unknown;
  after: unknown;
  feed_hash: string | null;
  feed_path: string | null;
  feed_mode: 'full' | 'delta' | null;
  created_at: Instant;
  updated_at: Instant;
  finished_at: Date | null;
  seconds_to_finish: number | null;
  platform_user_id: string | null;
  currently_active: boolean | null;
  org: string;
  /** The group's name from training.groups; null when no groups sync named it (or not a group action). */
  group_name: string | null;
}

/** Memberships trainsync applied; a removal sets removed_at. */
export interface GroupMembersTable {
  /** The organisation's slug (training.organisations). */
  org: string;
  group_id: string;
  user_id: string;
  employee_id: string;
  since: ColumnType<Date, Date | string, Date | string>;
  removed_at: NullableInstant;
}

export interface ProvisioningTables {
  'trainsync.identities': IdentitiesTable;
  'trainsync.feeds': FeedsTable;
  'trainsync.provisioning_actions': ProvisioningActionsTable;
  'trainsync.provisioning_audit': ProvisioningAuditView;
  'training.group_members': GroupMembersTable;
}

declare module '../../warehouse/database.ts' {
  interface Database extends ProvisioningTables {}
}
