import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

/** What the warehouse records of an organisation (never its key). */
export interface OrganisationRecord {
  slug: string;
  name: string;
  readerRole?: string;
}

/**
 * Writes the configured organisations into training.organisations, so every `org`
 * column's foreign key finds its row. Organisations no longer configured are kept:
 * their rows stay in the warehouse until someone deletes them on purpose.
 */
export async function registerOrganisations(db: Kysely<Database>, orgs: readonly OrganisationRecord[]): Promise<void> {
  if (orgs.length === 0) return;
  await db
    .insertInto('training.organisations')
    .values(orgs.map((org) => ({ slug: org.slug, name: org.name })))
    .onConflict((oc) =>
      oc.column('slug').doUpdateSet((eb) => ({ name: eb.ref('excluded.name'), updated_at: new Date() })).where((eb) => eb('training.organisations.name', 'is distinct from', eb.ref('excluded.name'))),
    )
    .execute();
}
