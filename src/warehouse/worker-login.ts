import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { APP_ROLE } from './connection-settings.ts';

/**
 * trainsync's own login (DATABASE_URL) and what could let it past row security. Row security
 * binds a login that is not a superuser, has no BYPASSRLS, owns no table (the owner is bound
 * only where the table forces row security) and cannot become a role that owns one: each of
 * those would let a statement that says `reset role` (or `set role <owner>`) read every
 * organisation. The owner (TRAINSYNC_OWNER_DATABASE_URL) creates this login when it is missing.
 */

/** The schemas trainsync's tables live in. */
const SCHEMAS = ['training', 'trainsync'];

/** What could let a login past row security, and the tables that do not force it. */
export interface WorkerLoginReport {
  /** The login (session_user): the URL's user, whatever role a session took since. */
  login: string;
  superuser: boolean;
  bypassRls: boolean;
  /** Roles owning a trainsync table that the login is, or may become (SET ROLE): itself, or a role it is a member of. */
  owners: string[];
  /** Tables with an organisation (an `org` column, or training.organisations) whose row security is not enabled and forced. */
  unforced: string[];
}

/** The login of a connection string (decoded), or undefined when it names none. */
export function loginOf(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).username) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads the report for the session's own login (session_user, not the role it took): one
 * statement over the catalogs, run on a connection of DATABASE_URL.
 */
export async function inspectWorkerLogin(client: pg.ClientBase | pg.Pool): Promise<WorkerLoginReport> {
  const { rows } = await client.query<WorkerLoginReport>(
    `select r.rolname as login, r.rolsuper as superuser, r.rolbypassrls as "bypassRls",
            array(select distinct pg_get_userbyid(c.relowner)::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
                  where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
                    and pg_has_role(r.oid, c.relowner, 'MEMBER') order by 1) as owners,
            array(select n.nspname || '.' || c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
                  where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p')
                    and (exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped)
                         or (n.nspname = 'training' and c.relname = 'organisations'))
                    and not (c.relrowsecurity and c.relforcerowsecurity)
                  order by 1) as unforced
     from pg_roles r where r.rolname = session_user`,
    [SCHEMAS],
  );
  const row = rows[0];
  if (!row) throw new Error('the session\'s login is not in pg_roles');
  return row;
}

/** The problems of a report, each with the fix that names the statement or the variable; empty when none. */
export function workerLoginProblems(report: WorkerLoginReport): { problem: string; fix: string }[] {
  const login = report.login;
  const ownLogin = `give trainsync a login of its own: DATABASE_URL=postgres://trainsync_worker@…, and this URL as TRAINSYNC_OWNER_DATABASE_URL (\`trainsync migrate\` creates the login, or as a superuser: CREATE ROLE trainsync_worker LOGIN; GRANT ${APP_ROLE} TO trainsync_worker)`;
  const problems: { problem: string; fix: string }[] = [];
  if (report.superuser) problems.push({ problem: `the login ${login} of DATABASE_URL is a superuser: a statement that resets its role reads and writes every organisation`, fix: ownLogin });
  if (report.bypassRls && !report.superuser) problems.push({ problem: `the login ${login} of DATABASE_URL has BYPASSRLS: row security does not bind it`, fix: `as a superuser: ALTER ROLE ${login} NOBYPASSRLS` });
  if (!report.superuser && report.owners.includes(login)) problems.push({ problem: `the login ${login} of DATABASE_URL owns trainsync's tables: it may turn their row security off`, fix: ownLogin });
  const others = report.owners.filter((owner) => owner !== login);
  if (!report.superuser && others.length > 0) {
    problems.push({ problem: `the login ${login} of DATABASE_URL is a member of ${others.join(', ')}, which own${others.length === 1 ? 's' : ''} trainsync's tables: \`set role\` would lift row security`, fix: others.map((owner) => `REVOKE ${owner} FROM ${login}`).join('; ') });
  }
  if (report.unforced.length > 0) {
    const shown = report.unforced.length > 5 ? `${report.unforced.slice(0, 5).join(', ')} and ${report.unforced.length - 5} more` : report.unforced.join(', ');
    problems.push({ problem: `row security is not forced on ${shown}: their owner is not bound by it`, fix: `run \`trainsync migrate\` (it forces it), or as the owner: ALTER TABLE ${report.unforced[0]} FORCE ROW LEVEL SECURITY (each)` });
  }
  return problems;
}

/**
 * A SCRAM-SHA-256 verifier of `password`, as psql's \password sends it: the server stores it
 * as given, and the statement carries no password (a logged statement shows the verifier only).
 * The password as given, without SASLprep, as node-postgres proves it (the same for ASCII).
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

const DUPLICATE_OBJECT = '42710';
const UNIQUE_VIOLATION = '23505';
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * Run by the owner at migrate: the login of DATABASE_URL exists and is a member of
 * trainsync_app. A missing login is created (LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE
 * NOCREATEDB, with the URL's password as a SCRAM verifier, or none) when the owner may create
 * roles; otherwise nothing is done here, and the start-up's check names the fix. The owner's
 * own login (one URL for both, as before) is left as it is: the start warns about it.
 */
export async function ensureWorkerLogin(owner: pg.Pool, workerUrl: string, log: Logger): Promise<'created' | 'granted' | 'present' | 'skipped'> {
  const login = loginOf(workerUrl);
  if (login === undefined) return 'skipped';
  const client = await owner.connect();
  try {
    const app = await client.query('select 1 from pg_roles where rolname = $1', [APP_ROLE]);
    // Not migrated yet: the role the login joins is made by the views (the start-up's check names the fix).
    if (app.rowCount === 0) return 'skipped';
    const { rows } = await client.query<{ me: string; exists: boolean; member: boolean | null; may: boolean }>(
      `select current_user as me, exists (select 1 from pg_roles where rolname = $1) as exists,
              case when exists (select 1 from pg_roles where rolname = $1) then pg_has_role($1, $2, 'MEMBER') end as member,
              (select rolsuper or rolcreaterole from pg_roles where rolname = current_user) as may`,
      [login, APP_ROLE],
    );
    const state = rows[0]!;
    if (state.me === login) return 'present';
    const role = client.escapeIdentifier(login);
    let result: 'created' | 'granted' | 'present' = 'present';
    if (!state.exists) {
      if (!state.may) return 'skipped';
      const password = new URL(workerUrl).password;
      // Utility statements take no parameters: the name is an identifier, the password a verifier literal.
      const secret = password ? ` password ${client.escapeLiteral(scramVerifier(decodeURIComponent(password)))}` : '';
      try {
        await client.query(`create role ${role} login nosuperuser nobypassrls nocreaterole nocreatedb noreplication inherit${secret}`);
        result = 'created';
        log.info({ login }, `created the worker's login ${login} (a member of ${APP_ROLE}, owning nothing)${password ? '' : '; no password: set one with psql\'s \\password if the server asks for one'}`);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code !== DUPLICATE_OBJECT && code !== UNIQUE_VIOLATION) throw error;
      }
    }
    if (state.member !== true) {
      try {
        await client.query(`grant ${client.escapeIdentifier(APP_ROLE)} to ${role}`);
        if (result === 'present') result = 'granted';
      } catch (error) {
        // Not the owner's to give: the start-up's check says GRANT trainsync_app TO <login>.
        if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
      }
    }
    return result;
  } finally {
    client.release();
  }
}
