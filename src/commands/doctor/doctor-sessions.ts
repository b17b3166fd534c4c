import pg from 'pg';
import type { Config } from '../../config.ts';
import { errorMessage } from '../../lib/errors.ts';
import { describeDatabaseError, maskUrl } from '../../lib/infra-errors.ts';
import { AppRoleError, checkAppRole } from '../../warehouse/app-role.ts';
import { APP_ROLE } from '../../warehouse/connection-settings.ts';
import { inspectWorkerLogin, workerLoginProblems } from '../../warehouse/worker-login.ts';
import { DOCTOR_CONNECT_TIMEOUT_MS, type CheckResult } from './doctor-checks.ts';

/**
 * The two Postgres sessions trainsync depends on beyond reaching the server: the lock
 * session (every advisory lock of a process is held by one connection, so it must be a
 * session of its own, never a transaction-mode pool's shared server connection), and
 * DATABASE_URL's login taking role trainsync_app (which row-level security binds), and that
 * login unable to get past it (checkWorkerLoginLines).
 */

const SESSION_FIX =
  'point TRAINSYNC_LOCK_DATABASE_URL at Postgres itself or at a session-mode pool (PgBouncer `pool_mode = session`); DATABASE_URL may stay on the transaction-mode pool (docs/operator.md, Behind PgBouncer)';

function client(url: string): pg.Client {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: DOCTOR_CONNECT_TIMEOUT_MS });
  c.on('error', () => undefined);
  return c;
}

const pid = async (c: pg.Client): Promise<number> => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

/**
 * Reachable, and a real session: a client's statements keep one server process while a second
 * client holds a transaction open. Behind a transaction-mode pool the second client is handed
 * the server connection the first just released (PgBouncer reuses the last one used), so the
 * first moves to another: its advisory locks would stay behind on a connection others use.
 */
export async function checkLockSession(config: Config): Promise<CheckResult> {
  const url = config.TRAINSYNC_LOCK_DATABASE_URL ?? config.DATABASE_URL;
  const name = config.TRAINSYNC_LOCK_DATABASE_URL ? 'TRAINSYNC_LOCK_DATABASE_URL' : 'DATABASE_URL (TRAINSYNC_LOCK_DATABASE_URL is unset)';
  const where = `${maskUrl(url)} (${name})`;
  const a = client(url);
  const b = client(url);
  try {
    try {
      await a.connect();
      await b.connect();
    } catch (error) {
      const described = describeDatabaseError(error, url) ?? errorMessage(error);
      return { check: 'lock session', level: 'fail', detail: `cannot connect the lock session to ${where}: ${described}`, fix: `start Postgres or the pool it names, or fix ${config.TRAINSYNC_LOCK_DATABASE_URL ? 'TRAINSYNC_LOCK_DATABASE_URL' : 'DATABASE_URL'}` };
    }
    // Three rounds: one is enough behind PgBouncer, more in case other clients took the connection meanwhile.
    let first = 0;
    let other = 0;
    let again = 0;
    let moved = false;
    for (let round = 0; round < 3 && !moved; round++) {
      first = await pid(a);
      await b.query('begin');
      other = await pid(b);
      again = await pid(a);
      await b.query('rollback');
      moved = first !== again || other === first;
    }
    if (moved) {
      return {
        check: 'lock session',
        level: 'fail',
        detail: `${where} is not a session: one client's statements ran on server processes ${first} and ${again}${other === first ? `, and another client's transaction on ${first}` : ''} (a transaction-mode pool); advisory locks taken there would be left on a shared connection`,
        fix: SESSION_FIX,
        refuses: true,
      };
    }
    return { check: 'lock session', level: 'ok', detail: `${where}: a session of its own (advisory locks hold)` };
  } catch (error) {
    return { check: 'lock session', level: 'fail', detail: `${where}: ${errorMessage(error)}`, fix: SESSION_FIX };
  } finally {
    await Promise.all([a.end().catch(() => undefined), b.end().catch(() => undefined)]);
  }
}

/** DATABASE_URL's login can take role trainsync_app, as every scoped transaction does. */
export async function checkAppRoleLine(config: Config): Promise<CheckResult> {
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 1, connectionTimeoutMillis: DOCTOR_CONNECT_TIMEOUT_MS });
  pool.on('error', () => undefined);
  const where = maskUrl(config.DATABASE_URL);
  try {
    const { rows } = await pool.query<{ login: string; present: boolean; member: boolean | null }>(
      `select current_user as login, exists (select 1 from pg_roles where rolname = $1) as present,
              case when exists (select 1 from pg_roles where rolname = $1) then pg_has_role(current_user, $1, 'MEMBER') end as member`,
      [APP_ROLE],
    );
    const { login, present, member } = rows[0]!;
    if (!present) {
      return { check: 'app role', level: 'fail', detail: `role ${APP_ROLE} does not exist in the server of DATABASE_URL (${where})`, fix: `run \`trainsync migrate\` (it creates it), or as a superuser: CREATE ROLE ${APP_ROLE} NOLOGIN; GRANT ${APP_ROLE} TO ${login}`, refuses: true };
    }
    if (!member) {
      return { check: 'app role', level: 'fail', detail: `the login ${login} of DATABASE_URL (${where}) cannot take role ${APP_ROLE}: every command and the worker refuse to start`, fix: `as a superuser: GRANT ${APP_ROLE} TO ${login}`, refuses: true };
    }
    // Then as trainsync takes it, in a transaction (set_config('role', …, true)).
    await checkAppRole(pool, config.DATABASE_URL);
    return { check: 'app role', level: 'ok', detail: `the login ${login} takes role ${APP_ROLE} (row-level security binds it to each transaction's organisations)` };
  } catch (error) {
    if (error instanceof AppRoleError) return { check: 'app role', level: 'fail', detail: error.message, fix: `as a superuser: GRANT ${APP_ROLE} TO <the login of DATABASE_URL>`, refuses: true };
    return { check: 'app role', level: 'fail', detail: `could not check role ${APP_ROLE} at ${where}: ${errorMessage(error)}`, fix: 'fix the Postgres failure above first' };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * DATABASE_URL's login cannot get past row security: not a superuser, no BYPASSRLS, owner of
 * no trainsync table nor a member of a role that owns one, and every table with an
 * organisation forces row security. One failed line per problem, each naming its fix (a
 * failed check, exit 1: trainsync still runs, with a warning at start, as it did before).
 */
export async function checkWorkerLoginLines(config: Config): Promise<CheckResult[]> {
  const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 1, connectionTimeoutMillis: DOCTOR_CONNECT_TIMEOUT_MS });
  pool.on('error', () => undefined);
  try {
    const report = await inspectWorkerLogin(pool);
    const problems = workerLoginProblems(report);
    if (problems.length === 0) {
      return [{ check: 'login', level: 'ok', detail: `the login ${report.login} of DATABASE_URL cannot bypass row security: no superuser, no BYPASSRLS, owns no table; forced on every table with an organisation` }];
    }
    return problems.map(({ problem, fix }) => ({ check: 'login', level: 'fail', detail: problem, fix }));
  } catch (error) {
    return [{ check: 'login', level: 'fail', detail: `could not read the login of DATABASE_URL (${maskUrl(config.DATABASE_URL)}): ${errorMessage(error)}`, fix: 'fix the Postgres failure above first' }];
  } finally {
    await pool.end().catch(() => undefined);
  }
}
