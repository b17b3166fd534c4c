import type { ColumnType, Generated } from 'kysely';

export interface OrganisationsTable {
  slug: string;
  name: string;
  platform_org_id: string | null;
  reader_role: string | null;
  created_at: Generated<Date>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface OrganisationTables {
  'training.organisations': OrganisationsTable;
}
