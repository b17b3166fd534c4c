import type { Kysely } from 'kysely';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
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
  if (!orgs.some((org) => org.slug === DEFAULT_ORG)) await forgetUnusedDefault(db);
  await db
    .insertInto('training.organisations')
    .values(orgs.map((org) => ({ slug: org.slug, name: org.name })))
    .onConflict((oc) =>
      oc.column('slug').doUpdateSet((eb) => ({ name: eb.ref('excluded.name'), updated_at: new Date() })).where((eb) => eb('training.organisations.name', 'is distinct from', eb.ref('excluded.name'))),
    )
    .execute();
}

/**
 * The first migration registers `default` (the organisation a single-organisation
 * warehouse's rows belong to). With an orgs file that does not name it, it is removed
 * while nothing refers to it, so training.organisations lists only the file's
 * organisations; a warehouse that holds `default`'s history keeps it (the foreign keys
 * refuse the delete), as any organisation no longer configured is kept.
 */
async function forgetUnusedDefault(db: Kysely<Database>): Promise<void> {
  try {
    await db.deleteFrom('training.organisations').where('slug', '=', DEFAULT_ORG).execute();
  } catch (error) {
    if ((error as { code?: unknown }).code !== '23503') throw error;
  }
}
