import type pg from 'pg';
import { TrainsyncError } from '../lib/errors.ts';
import { recordReaderRole } from './organisations.ts';

/** An organisation whose rows a reader role of its own may see. */
export interface OrgReader {
  slug: string;
  readerRole: string;
}

/** A per-organisation reader that would see more than its organisation: refused (a configuration to fix: exit 2). */
export class OrgReaderError extends TrainsyncError {
  constructor(message: string) {
    super(message, { code: 'ORG_READER', retryable: false });
    this.name = 'OrgReaderError';
  }
}

/**
 * Creates each organisation's reader role (NOLOGIN: an admin grants it to a BI login),
 * makes it a member of trainsync_org_reader (the role the reader policies of
 * sql/views/90 are bound to), gives it SELECT on schema training (row-level security
 * then shows it only its organisation's rows) and records it in training.organisations. Safe to run
 * at every migrate. A role that is a member of trainsync_reader would see everything:
 * refused, with the fix.
 */
export async function ensureOrgReaders(pool: pg.Pool, readers: readonly OrgReader[]): Promise<string[]> {
  if (readers.length === 0) return [];
  const client = await pool.connect();
  const created: string[] = [];
  try {
    for (const { slug, readerRole } of readers) {
      const role = client.escapeIdentifier(readerRole);
      const exists = await client.query('select 1 from pg_roles where rolname = $1', [readerRole]);
      if (exists.rowCount === 0) {
        try {
          await client.query(`create role ${role} nologin`);
          created.push(readerRole);
        } catch (error) {
          // Another process (a second worker migrating at once) created it first.
          if ((error as { code?: string }).code !== '42710') {
            throw new OrgReaderError(`could not create the reader role ${readerRole} of organisation ${slug} (${(error as Error).message}); run \`trainsync migrate\` as a role with CREATEROLE, or create it yourself: CREATE ROLE ${readerRole} NOLOGIN`);
          }
        }
      }
      const wide = await client.query<{ wide: boolean }>(`select pg_has_role($1, 'trainsync_reader', 'MEMBER') as wide`, [readerRole]);
      if (wide.rows[0]?.wide) {
        throw new OrgReaderError(`the reader role ${readerRole} of organisation ${slug} is a member of trainsync_reader, so it would see every organisation; REVOKE trainsync_reader FROM ${readerRole}`);
      }
      // The reader policies (sql/views/90) are bound to this group and trainsync_reader, not
      // to every role: it holds no privilege of its own.
      if (!(await client.query<{ member: boolean }>(`select pg_has_role($1, 'trainsync_org_reader', 'MEMBER') as member`, [readerRole])).rows[0]?.member) {
        await client.query(`grant trainsync_org_reader to ${role}`);
      }
      await client.query(`grant usage on schema training to ${role}`);
      await client.query(`grant select on all tables in schema training to ${role}`);
      await client.query(`alter default privileges in schema training grant select on tables to ${role}`);
      // Nothing in schema trainsync: training.hr_reconciliation reads it with its owner's
      // rights (sql/views/70). Grants an older version gave (columns of the actions and
      // identities, the schema's usage) are taken back.
      await client.query(`revoke all on all tables in schema trainsync from ${role}`);
      await client.query(`revoke usage on schema trainsync from ${role}`);
      await recordReaderRole(client, slug, readerRole);
    }
    return created;
  } finally {
    client.release();
  }
}
