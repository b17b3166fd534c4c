import type pg from 'pg';
import { maskUrl } from '../lib/infra-errors.ts';
import { TrainsyncError } from '../lib/errors.ts';
import type { Logger } from 'pino';
import { APP_ROLE, createPool } from './pool.ts';
import { createScopes, type OrgScopes } from './scope.ts';

/** DATABASE_URL's login cannot take trainsync_app: a configuration to fix (exit 2). */
export class AppRoleError extends TrainsyncError {
  constructor(message: string) {
    super(message, { code: 'APP_ROLE', retryable: false });
    this.name = 'AppRoleError';
  }
}

/** The login of a connection string, for the GRANT the message proposes. */
function loginOf(databaseUrl: string): string {
  try {
    return decodeURIComponent(new URL(databaseUrl).username) || 'your_login';
  } catch {
    return 'your_login';
  }
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
    const login = loginOf(databaseUrl);
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

/** trainsync's own pool (role trainsync_app) and its scopes, for a command that needs no App; `close` ends the pool. */
export async function openAppScopes(databaseUrl: string, log: Logger, max = 2): Promise<{ scopes: OrgScopes; close(): Promise<void> }> {
  const pool = createPool(databaseUrl, { max, log, role: APP_ROLE });
  try {
    await checkAppRole(pool, databaseUrl);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return { scopes: createScopes(pool, log), close: () => pool.end().catch(() => undefined) };
}
