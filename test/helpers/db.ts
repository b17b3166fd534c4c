/**
 * A Postgres database per test file (or per test), copied from a migrated template.
 *
 * ```ts
 * let t: TestDatabase;
 * beforeAll(async () => { t = await createTestDatabase(); });
 * afterAll(async () => { await t.drop(); });
 * // t.pool (raw pg, for loaders and COPY), t.db (kysely), t.url (for a child process)
 * ```
 *
 * Two logins, as in production: `url` is trainsync's own login (WORKER_LOGIN: no superuser,
 * no BYPASSRLS, owns nothing, a member of trainsync_app), the DATABASE_URL of an app or a
 * child process; `ownerUrl` is the owner's (the admin URL's superuser), its
 * TRAINSYNC_OWNER_DATABASE_URL, and `pool`/`db` run as the owner, for seeding and inspecting
 * any organisation's rows. `databaseEnv(t)` gives both variables.
 *
 * How it works: `test/helpers/global-setup.ts` builds the template once per vitest
 * run, named after a hash of every file under sql/ (`trainsync_tpl_<hash12>`), so a
 * new or edited migration or view gets a new template and an unchanged sql/ reuses
 * the existing one across runs. `CREATE DATABASE … TEMPLATE` copies it in well under
 * a second. Building happens under an advisory lock on the `postgres` database, so
 * parallel runs (and files that call this without the global setup) never race.
 *
 * Test databases are named `trainsync_test_<epoch seconds>_<random>`; setup drops
 * those older than a day (a crashed run's leftovers) and templates of other sql/
 * versions unused for three hours (a run marks its template used when it starts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createLogger } from '../../src/runtime/log.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { migrate, SQL_DIR } from '../../src/warehouse/migrator.ts';
import { createDb, createOwnerPool, createPool } from '../../src/warehouse/pool.ts';
import { ensureWorkerLogin } from '../../src/warehouse/worker-login.ts';
import { lendFrom, type PgLender } from '../../src/warehouse/transaction.ts';
import { createScopes, type OrgScope } from '../../src/warehouse/scope.ts';

/** The server's maintenance database URL (override with TEST_DATABASE_ADMIN_URL). */
export const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const TEMPLATE_LOCK_KEY = '7236512894561230002';
const TEST_DB_PREFIX = 'trainsync_test_';
const TEMPLATE_PREFIX = 'trainsync_tpl_';
const DAY_SECONDS = 86_400;
/**
 * A template of another sql/ version is dropped once unused this long (sql/ changes often
 * while developing). Counted from its last use, not its build: a suite of another sql/
 * version starting beside a long run must not drop the template that run still copies.
 */
const OLD_TEMPLATE_SECONDS = 3 * 3_600;

/** trainsync's own login in tests (created once per server, as `trainsync migrate` does). */
export const WORKER_LOGIN = 'trainsync_worker';

export interface TestDatabase {
  /** This database as trainsync's own login (WORKER_LOGIN): an app's or a child process's DATABASE_URL. */
  url: string;
  /** This database as the owner (the admin URL's superuser): TRAINSYNC_OWNER_DATABASE_URL. */
  ownerUrl: string;
  name: string;
  /** The owner's pool from createPool (TimeZone=UTC, int8 as number), max 5 connections. */
  pool: pg.Pool;
  /** kysely over `pool`. */
  db: Kysely<Database>;
  /** Lends a client of `pool` (for withTransaction and COPY). */
  withPgClient: PgLender;
  /**
   * One organisation's handle over `pool` (the owner's, which row-level security does not
   * bind), for calling a store as that organisation: `storeFn(t.scope(), …)`; default `default`.
   */
  scope(org?: string): OrgScope;
  /** Ends the pool and drops the database, terminating other connections; safe to call twice. */
  drop(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /**
   * true (default): a copy of the migrated template. false: an empty database
   * (from template0), e.g. to test the migrator itself.
   */
  migrated?: boolean;
}

/** The URL of database `name` on the admin URL's server, as the admin (the owner). */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The URL of database `name` on the admin URL's server, as trainsync's own login (WORKER_LOGIN). */
export function workerUrl(name: string): string {
  const url = new URL(databaseUrl(name));
  url.username = WORKER_LOGIN;
  url.password = '';
  return url.toString();
}

/** The owner's URL of a test URL: the same server and database as the admin when it names WORKER_LOGIN, else the URL itself (one login for both). */
export function ownerUrlOf(url: string): string {
  const parsed = new URL(url);
  if (decodeURIComponent(parsed.username) !== WORKER_LOGIN) return url;
  const admin = new URL(ADMIN_URL);
  parsed.username = admin.username;
  parsed.password = admin.password;
  return parsed.toString();
}

/** DATABASE_URL (trainsync's own login) and TRAINSYNC_OWNER_DATABASE_URL (the owner) of a test database, for loadConfig or a child. */
export function databaseEnv(database: { url: string; ownerUrl: string }): { DATABASE_URL: string; TRAINSYNC_OWNER_DATABASE_URL: string } {
  return { DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl };
}

let workerLoginPromise: Promise<unknown> | undefined;

/**
 * The worker's login on the server, created by the owner as `trainsync migrate` does (once per
 * process; roles are per server). Through a pool of its own, ended at once: an idle session
 * of the test's pool would stay for the pool's 10 s idle timeout, and a test that waits for
 * every other session of its database to end (test/status-many-orgs.test.ts) waited for it.
 */
function ensureTestWorkerLogin(name: string): Promise<unknown> {
  workerLoginPromise ??= (async () => {
    const pool = createPool(databaseUrl(name), { max: 1, applicationName: 'trainsync-test-login' });
    try {
      return await ensureWorkerLogin(pool, workerUrl(name), createLogger('silent'));
    } finally {
      await pool.end().catch(() => undefined);
    }
  })().catch((error: unknown) => {
    workerLoginPromise = undefined;
    throw error;
  });
  return workerLoginPromise;
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/** `trainsync_tpl_<first 12 hex of sha256 over every sql/ file's path and content>`. */
export async function templateName(sqlDir: string = SQL_DIR): Promise<string> {
  const hash = createHash('sha256');
  for (const file of await listFiles(sqlDir)) {
    hash.update(path.relative(sqlDir, file)).update('\0').update(await readFile(file)).update('\0');
  }
  return `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 12)}`;
}

/** Runs `fn` with a client of the admin (maintenance) database, ended afterwards. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Runs `fn` as another login (a reader's, say) of the test database `name`, with the notices the
 * server sent it (a side channel the reader tests watch), ended afterwards.
 */
export async function asLogin<T>(name: string, login: string, fn: (client: pg.Client, notices: string[]) => Promise<T>): Promise<T> {
  const url = new URL(databaseUrl(name));
  url.username = login;
  const client = new pg.Client({ connectionString: url.toString() });
  const notices: string[] = [];
  client.on('notice', (notice) => notices.push([notice.message, notice.detail, notice.where].filter(Boolean).join(' | ')));
  await client.connect();
  try {
    return await fn(client, notices);
  } finally {
    await client.end();
  }
}

async function databaseExists(client: pg.Client, name: string): Promise<boolean> {
  const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
  return (rowCount ?? 0) > 0;
}

let templatePromise: Promise<string> | undefined;

/**
 * Builds the migrated template for the current sql/ if it does not exist yet and
 * returns its name. Builds into a scratch name and renames at the end, so a crashed
 * build never leaves a half-migrated template behind. Memoised per process.
 */
export function ensureTemplateDatabase(): Promise<string> {
  templatePromise ??= buildTemplate().catch((error: unknown) => {
    templatePromise = undefined;
    throw error;
  });
  return templatePromise;
}

async function buildTemplate(): Promise<string> {
  const name = await templateName();
  return withAdmin(async (admin) => {
    // In use from now: a setup of another sql/ version keeps it (dropStaleTestDatabases).
    const used = async (): Promise<string> => {
      await admin.query(`comment on database ${admin.escapeIdentifier(name)} is ${admin.escapeLiteral(new Date().toISOString())}`);
      return name;
    };
    if (await databaseExists(admin, name)) return used();
    await admin.query('select pg_advisory_lock($1::bigint)', [TEMPLATE_LOCK_KEY]);
    try {
      if (await databaseExists(admin, name)) return used();
      const scratch = `${name}_build`;
      await admin.query(`drop database if exists ${admin.escapeIdentifier(scratch)} with (force)`);
      await admin.query(`create database ${admin.escapeIdentifier(scratch)} template template0`);
      const pool = createOwnerPool(databaseUrl(scratch), { max: 1, applicationName: 'trainsync-test-template' });
      try {
        await migrate(pool, createLogger('silent'));
        await ensureWorkerLogin(pool, workerUrl(scratch), createLogger('silent'));
      } finally {
        await pool.end();
      }
      await admin.query(`alter database ${admin.escapeIdentifier(scratch)} rename to ${admin.escapeIdentifier(name)}`);
      // When it was last used, so a later setup can drop templates of old sql/ versions.
      return await used();
    } finally {
      await admin.query('select pg_advisory_unlock($1::bigint)', [TEMPLATE_LOCK_KEY]);
    }
  });
}

/**
 * Drops test databases created more than a day ago (by the time in their name) and
 * templates other than `keep` unused for OLD_TEMPLATE_SECONDS. Best effort.
 */
export async function dropStaleTestDatabases(keep: string): Promise<string[]> {
  return withAdmin(async (admin) => {
    const { rows } = await admin.query<{ datname: string; built: string | null }>(
      `select datname, shobj_description(oid, 'pg_database') as built from pg_database
       where datname like 'trainsync\\_test\\_%' or datname like 'trainsync\\_tpl\\_%'`,
    );
    const now = Date.now() / 1000;
    const stale = rows
      .filter((row) => {
        if (row.datname.startsWith(TEST_DB_PREFIX)) {
          const created = Number.parseInt(row.datname.slice(TEST_DB_PREFIX.length).split('_')[0] ?? '', 10);
          return Number.isFinite(created) && now - created > DAY_SECONDS;
        }
        if (row.datname === keep || row.datname.endsWith('_build')) return false;
        const built = row.built ? Date.parse(row.built) / 1000 : Number.NaN;
        return Number.isFinite(built) && now - built > OLD_TEMPLATE_SECONDS;
      })
      .map((row) => row.datname);
    for (const name of stale) {
      await admin.query(`drop database if exists ${admin.escapeIdentifier(name)} with (force)`).catch(() => undefined);
    }
    return stale;
  });
}

/** A fresh database for one test file (or test); see the module comment. */
export async function createTestDatabase(options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const template = options.migrated === false ? 'template0' : await ensureTemplateDatabase();
  const name = `${TEST_DB_PREFIX}${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString('hex')}`;
  await withAdmin((admin) =>
    admin.query(`create database ${admin.escapeIdentifier(name)} template ${admin.escapeIdentifier(template)}`),
  );
  const ownerUrl = databaseUrl(name);
  const pool = createPool(ownerUrl, { max: 5, applicationName: 'trainsync-test' });
  const db = createDb(pool);
  // An empty database has no trainsync_app yet (the migrations make it): its test migrates first.
  if (options.migrated !== false) await ensureTestWorkerLogin(name);
  let dropped = false;
  const scopes = createScopes(pool, createLogger('silent'), { rowSecurity: false });
  return {
    url: workerUrl(name),
    ownerUrl,
    name,
    pool,
    withPgClient: lendFrom(pool),
    scope: (org = 'default') => scopes.scope(org),
    db,
    async drop(): Promise<void> {
      if (dropped) return;
      dropped = true;
      await db.destroy().catch(() => undefined);
      await withAdmin((admin) => admin.query(`drop database if exists ${admin.escapeIdentifier(name)} with (force)`));
    },
  };
}
