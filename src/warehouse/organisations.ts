import type { Kysely } from 'kysely';
import type pg from 'pg';
import { DEFAULT_ORG } from '../settings/orgs-file.ts';
import type { Database } from './database.ts';
import type { OrgScope, OrgsScope } from './scope.ts';

/**
 * The store of `training.organisations`: every statement that writes it is here
 * (test/table-owners.test.ts keeps it so). The owner registers the configured
 * organisations and their reader roles (`migrate`); trainsync learns each one's platform
 * GUID from its first verified webhook, through its scoped handle.
 */

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

/** The platform GUID learned for the organisation of `scope`, or null while none is. */
export async function platformOrgIdOf(scope: OrgScope): Promise<string | null> {
  const { rows } = await scope.lend((client) => client.query<{ guid: string | null }>('select platform_org_id::text as guid from training.organisations where slug = $1', [scope.org]));
  return rows[0]?.guid ?? null;
}

/**
 * Sets the organisation's platform GUID if none is set; false when another organisation holds
 * that GUID already (the column is unique).
 */
export async function learnPlatformOrgId(scope: OrgScope, guid: string): Promise<boolean> {
  try {
    await scope.lend((client) => client.query('update training.organisations set platform_org_id = $2, updated_at = now() where slug = $1 and platform_org_id is null', [scope.org, guid]));
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code !== '23505') throw error;
    return false;
  }
}

/** The organisation that holds a platform GUID (a handle across organisations: it is another organisation's row). */
export async function holderOfPlatformOrgId(all: OrgsScope, guid: string): Promise<string | undefined> {
  const { rows } = await all.lend((client) => client.query<{ slug: string }>('select slug from training.organisations where platform_org_id = $1', [guid]));
  return rows[0]?.slug;
}

/** Records an organisation's reader role (`migrate`, as the owner, on `client`: no scope binds it). */
export async function recordReaderRole(client: pg.PoolClient, slug: string, readerRole: string): Promise<void> {
  await client.query('update training.organisations set reader_role = $2, updated_at = now() where slug = $1 and reader_role is distinct from $2', [slug, readerRole]);
}
