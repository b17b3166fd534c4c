import type pg from 'pg';
import { maskUrl } from '../lib/infra-errors.ts';
import { TrainsyncError } from '../lib/errors.ts';
import type { Logger } from 'pino';
import { APP_ROLE } from './connection-settings.ts';
import { createPool } from './pool.ts';
import { createScopes, type OrgScopes } from './scope.ts';
import { inspectWorkerLogin, loginOf, workerLoginProblems } from './worker-login.ts';

/** DATABASE_URL's login cannot take trainsync_app: a configuration to fix (exit 2). */
export class AppRoleError extends TrainsyncError {
  constructor(message: string) {
    super(message, { code: 'APP_ROLE', retryable: false });
    this.name = 'AppRoleError';
  }
}

/** The login of a connection string, for the GRANT the message proposes. */
function loginIn(databaseUrl: string): string {
  return loginOf(databaseUrl) ?? 'your_login';
}

/**
 * Opens one connection of trainsync's pool and takes role trainsync_app as a scoped
 * transaction does: a login that is not a member of the role, or a database whose
 * migrations never created it, is refused with the fix. Any other failure (Postgres down) is left to the caller's
 * usual reporting.
 */
export async function checkAppRole(pool: pg.Pool, databaseUrl: string): Promise<void> {
  try {
    // What every scoped transaction does (set_config('role', …, true)): a login that is not a
    // member, or a database without the role, fails here, once, with the fix.
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query("select set_config('role', $1, true)", [APP_ROLE]);
      await client.query('rollback');
    } finally {
      client.release();
    }
  } catch (error) {
    if (error instanceof AppRoleError) throw error;
    const code = (error as { code?: unknown }).code;
    const message = (error as Error).message ?? '';
    const login = loginIn(databaseUrl);
    if (code === '42501' && message.includes(APP_ROLE)) {
      throw new AppRoleError(
        `the login ${login} of DATABASE_URL (${maskUrl(databaseUrl)}) cannot take role ${APP_ROLE} (${message}); as a superuser: GRANT ${APP_ROLE} TO ${login}`,
      );
    }
    if (code === '22023' && message.includes(APP_ROLE)) {
      throw new AppRoleError(
        `role ${APP_ROLE} does not exist in the server of DATABASE_URL (${maskUrl(databaseUrl)}): run \`trainsync migrate\` (it creates it), or as a superuser: CREATE ROLE ${APP_ROLE} NOLOGIN; GRANT ${APP_ROLE} TO ${login}`,
      );
    }
    throw error;
  }
}

/** Where the owner's URL came from, for a message that names the variable to set. */
function ownerSource(config: OwnerUrls): string {
  if (config.TRAINSYNC_OWNER_DATABASE_URL === config.DATABASE_URL && config.TRAINSYNC_OWNER_DATABASE_URL !== config.TRAINSYNC_LOCK_DATABASE_URL) return 'TRAINSYNC_OWNER_DATABASE_URL, unset, so DATABASE_URL';
  if (config.TRAINSYNC_OWNER_DATABASE_URL === config.TRAINSYNC_LOCK_DATABASE_URL) return 'TRAINSYNC_OWNER_DATABASE_URL, or TRAINSYNC_LOCK_DATABASE_URL when it is unset';
  return 'TRAINSYNC_OWNER_DATABASE_URL';
}

/** The database variables a message names. */
export interface OwnerUrls {
  DATABASE_URL: string;
  TRAINSYNC_OWNER_DATABASE_URL: string;
  TRAINSYNC_LOCK_DATABASE_URL?: string | undefined;
}

/**
 * The owner's work (migrations, the organisations' rows, the reader roles) refused for want of
 * privilege: the owner's URL names a login that is not the tables' owner, typically the worker's
 * login given for both. An AppRoleError naming the variable to set (exit 2); else undefined.
 */
export function ownerRefusal(error: unknown, config: OwnerUrls): AppRoleError | undefined {
  if ((error as { code?: unknown }).code !== '42501' && !((error as { cause?: { code?: unknown } }).cause?.code === '42501')) return undefined;
  const login = loginIn(config.TRAINSYNC_OWNER_DATABASE_URL);
  return new AppRoleError(
    `the login ${login} of ${ownerSource(config)} (${maskUrl(config.TRAINSYNC_OWNER_DATABASE_URL)}) cannot do the owner's work (${(error as Error).message}): set TRAINSYNC_OWNER_DATABASE_URL to a URL of the tables' owner (the login that ran the first \`trainsync migrate\`, e.g. postgres://postgres@HOST:5432/DB), and keep DATABASE_URL for trainsync's own login`,
  );
}

/** The logins already warned about by this process: once at start, not at every command's pool. */
const warned = new Set<string>();

/**
 * The login of trainsync's pool could get past row security (a superuser, BYPASSRLS, an owner of
 * the tables or a member of one; a table whose row security is not forced): a warning, once
 * per process, naming the fix. It keeps running, as deployments with one login for both did;
 * `trainsync doctor` fails on it. A failure to read the catalogs is left to the queries after.
 */
export async function warnIfUnbound(pool: pg.Pool, log: Logger): Promise<void> {
  let problems: ReturnType<typeof workerLoginProblems>;
  let login: string;
  try {
    const report = await inspectWorkerLogin(pool);
    login = report.login;
    problems = workerLoginProblems(report);
  } catch {
    return;
  }
  const key = `${login}\0${problems.map((p) => p.problem).join('\0')}`;
  if (problems.length === 0 || warned.has(key)) return;
  warned.add(key);
  for (const { problem, fix } of problems) log.warn({ login, fix }, `row security does not bind trainsync: ${problem}; fix: ${fix}`);
}

/** trainsync's own pool (role trainsync_app) and its scopes, for a command that needs no App; `close` ends the pool. */
export async function openAppScopes(databaseUrl: string, log: Logger, max = 2): Promise<{ scopes: OrgScopes; close(): Promise<void> }> {
  const pool = createPool(databaseUrl, { max, log, role: APP_ROLE });
  try {
    await checkAppRole(pool, databaseUrl);
    await warnIfUnbound(pool, log);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return { scopes: createScopes(pool, log), close: () => pool.end().catch(() => undefined) };
}
