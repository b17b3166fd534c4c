/**
 * The warehouse's tables as kysely sees them, keyed `schema.table`: the `Database` every
 * handle's Kysely is typed with (src/warehouse/scope.ts).
 *
 * The warehouse declares only its own (the organisations, the migrations' bookkeeping).
 * Each wing declares its tables beside its stores and adds them to `Database` by
 * declaration merging (`declare module '…/warehouse/database.ts' { interface Database
 * extends … {} }`): src/sync/tables.ts, src/sync/resources/tables.ts,
 * src/provisioning/employee-tables.ts, src/provisioning/apply/tables.ts, src/scim/tables.ts,
 * src/webhooks/tables.ts. So storage imports no wing, and a row type has one home.
 *
 * The SQL in sql/migrations is the source of truth; these types follow it. Instants
 * read back as `Date` (millisecond precision in JS; Postgres keeps microseconds).
 * int8 columns read back as `number` because createPool installs an int8 parser
 * (see pool.ts). uuid columns are lower-case strings.
 */
import type { GeneratedInstant } from './column-types.ts';
import type { OrganisationTables } from './organisation-tables.ts';

export interface SchemaMigrationsTable {
  name: string;
  checksum: string;
  applied_at: GeneratedInstant;
}

export interface Database extends OrganisationTables {
  'trainsync.schema_migrations': SchemaMigrationsTable;
}
