import { errorMessage, TrainsyncError } from '../lib/errors.ts';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from 'pino';
import { inRetriedTransaction, inTransaction } from './transaction.ts';

/** `sql/` of this package, wherever the process was started from. */
export const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));

/**
 * One fixed key for pg_advisory_lock: every migrating process of this database waits
 * for the one before it. (Advisory locks are per database, which is what we want.)
 */
export const MIGRATION_LOCK_KEY = '7236512894561230001';

const MIGRATION_FILE_RE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** One digest of every view file (names and contents), to tell whether they changed since last applied. */
function viewsDigest(views: readonly SqlFile[]): string {
  const hash = createHash('sha256');
  for (const view of views) hash.update(`${view.name}\0${view.checksum}\n`);
  return hash.digest('hex');
}

/**
 * Every view file, then the digest they were applied with, in one transaction. Run again
 * when Postgres breaks a deadlock by cancelling it: the views' DDL can meet a running
 * load's row locks in the other order. A failure names the view.
 */
async function applyViews(client: pg.PoolClient, views: readonly SqlFile[], digest: string): Promise<void> {
  let failing: string | undefined;
  try {
    await inRetriedTransaction(client, async () => {
      for (const view of views) {
        failing = view.name;
        await client.query(view.text);
      }
      failing = undefined;
      await client.query(
        `insert into trainsync.applied_views (digest) values ($1)
         on conflict (only_row) do update set digest = excluded.digest, applied_at = now()`,
        [digest],
      );
    });
  } catch (error) {
    throw new Error(`${failing === undefined ? 'views' : `view ${failing}`} failed: ${errorMessage(error)}`, { cause: error });
  }
}

export interface MigrateOptions {
  /** Folder holding `migrations/` and `views/`; default the package's `sql/`. */
  sqlDir?: string;
  /**
   * Apply the views even when they and the tables are as last applied (`trainsync
   * migrate`: a person repairing a view dropped by hand). Otherwise they are applied only
   * when a migration ran or a view file changed.
   */
  reapplyViews?: boolean;
}

export interface MigrateResult {
  /** Migration files applied by this call, in order (empty when up to date). */
  applied: string[];
  /** How many view files were (re)applied: 0 when they were already as in `sql/views`. */
  views: number;
}

/** A migration that was applied and has since been edited: refused. */
export class MigrationChangedError extends TrainsyncError {
  constructor(
    readonly migration: string,
    readonly appliedChecksum: string,
    readonly fileChecksum: string,
  ) {
    super(
      `migration ${migration} was already applied with checksum ${appliedChecksum}, but the file now has checksum ` +
        `${fileChecksum}: migrations are append-only: add a new numbered file instead`,
      { code: 'MIGRATION_CHANGED', retryable: false },
    );
    this.name = 'MigrationChangedError';
  }
}

interface SqlFile {
  name: string;
  text: string;
  checksum: string;
}

async function readSqlFiles(dir: string, accept: (name: string) => boolean): Promise<SqlFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: SqlFile[] = [];
  for (const name of names.filter(accept).sort()) {
    const text = await readFile(path.join(dir, name), 'utf8');
    files.push({ name, text, checksum: createHash('sha256').update(text).digest('hex') });
  }
  return files;
}

/** The numbered migration files, refusing two files with the same number. */
async function readMigrations(dir: string): Promise<SqlFile[]> {
  const files = await readSqlFiles(dir, (name) => name.endsWith('.sql'));
  const seen = new Map<string, string>();
  for (const file of files) {
    const match = MIGRATION_FILE_RE.exec(file.name);
    if (!match) throw new Error(`sql/migrations/${file.name}: expected a name like 0001_some_name.sql`);
    const other = seen.get(match[1]!);
    if (other) throw new Error(`sql/migrations: ${other} and ${file.name} share the number ${match[1]}`);
    seen.set(match[1]!, file.name);
  }
  return files;
}

/**
 * Applies `sql/migrations/NNNN_name.sql` not yet applied, in order, each in its own
 * transaction and recorded in `trainsync.schema_migrations`; then re-applies every
 * `sql/views/*.sql` (create or replace view, row security) in one transaction when a
 * migration ran or a view file changed since they were last applied (their digest is in
 * `trainsync.applied_views`): every process runs this at start, and re-creating the views
 * and policies takes an ACCESS EXCLUSIVE lock on each table they name, which a worker's
 * load in progress would otherwise meet (a deadlock Postgres breaks by cancelling one of
 * them) and which blocks every reader meanwhile. The whole run holds
 * an advisory lock, so concurrent callers wait and then find nothing to do. Refuses
 * (MigrationChangedError) when an applied migration's file has changed.
 */
export async function migrate(pool: pg.Pool, log: Logger, options: MigrateOptions = {}): Promise<MigrateResult> {
  const sqlDir = options.sqlDir ?? SQL_DIR;
  const migrations = await readMigrations(path.join(sqlDir, 'migrations'));
  const views = await readSqlFiles(path.join(sqlDir, 'views'), (name) => name.endsWith('.sql'));

  const client = await pool.connect();
  // A checked-out client has no listener of the pool's: without this one, the server
  // going away mid-migration is an unhandled 'error' event that ends the process. The
  // failure still reaches us through the query in flight.
  const ignore = (): void => undefined;
  client.on('error', ignore);
  let locked = false;
  let failed: Error | undefined;
  try {
    await client.query('select pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    locked = true;
    // Under the lock: concurrent "create ... if not exists" can still collide in the catalog.
    await client.query(`
      create schema if not exists trainsync;
      create table if not exists trainsync.schema_migrations (
        name       text primary key,
        checksum   text not null,
        applied_at timestamptz not null default now()
      );
      create table if not exists trainsync.applied_views (
        only_row   boolean primary key default true check (only_row),
        digest     text not null,
        applied_at timestamptz not null default now()
      );`);
    const { rows } = await client.query<{ name: string; checksum: string }>(
      'select name, checksum from trainsync.schema_migrations',
    );
    const applied = new Map(rows.map((row) => [row.name, row.checksum]));

    // Check every applied file before applying anything: a half-applied run helps nobody.
    for (const file of migrations) {
      const old = applied.get(file.name);
      if (old !== undefined && old !== file.checksum) throw new MigrationChangedError(file.name, old, file.checksum);
    }

    const appliedNow: string[] = [];
    for (const file of migrations) {
      if (applied.has(file.name)) continue;
      const started = Date.now();
      await inTransaction(client, async () => {
        await client.query(file.text);
        await client.query('insert into trainsync.schema_migrations (name, checksum) values ($1, $2)', [
          file.name,
          file.checksum,
        ]);
      }).catch((error: unknown) => {
        throw new Error(`migration ${file.name} failed: ${errorMessage(error)}`, {
          cause: error,
        });
      });
      appliedNow.push(file.name);
      log.info({ migration: file.name, ms: Date.now() - started }, 'migration applied');
    }

    const digest = viewsDigest(views);
    const { rows: viewState } = await client.query<{ digest: string }>('select digest from trainsync.applied_views');
    const viewsCurrent = appliedNow.length === 0 && viewState[0]?.digest === digest && options.reapplyViews !== true;
    if (views.length > 0 && !viewsCurrent) {
      await applyViews(client, views, digest);
      log.debug({ views: views.length }, 'views applied');
    }
    return { applied: appliedNow, views: viewsCurrent ? 0 : views.length };
  } catch (error) {
    // The connection may be gone or mid-transaction: never hand it back to the pool.
    failed = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    let broken = failed;
    if (locked) {
      try {
        await client.query('select pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]);
      } catch (error) {
        // Unlock failed: drop the connection, which releases a session lock for sure.
        broken ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    client.off('error', ignore);
    client.release(broken);
  }
}

/** A read-only command found the database missing or behind `sql/migrations`: nothing was created or changed. */
export class NotMigratedError extends Error {
  readonly code = 'NOT_MIGRATED';
  constructor(
    message: string,
    readonly pending: readonly string[],
  ) {
    super(message);
    this.name = 'NotMigratedError';
  }
}

const MISSING_DATABASE = '3D000';

/**
 * The migrations not applied yet, without creating or changing anything (for `status`,
 * `reconcile`, `doctor`): throws NotMigratedError naming `trainsync migrate` when the
 * database is missing or behind. `where` is the masked URL for the message.
 */
export async function requireMigrated(pool: pg.Pool, where: string, options: MigrateOptions = {}): Promise<void> {
  const pending = await pendingMigrations(pool, options);
  if (pending === 'no-database') throw new NotMigratedError(`the database at ${where} (DATABASE_URL) does not exist: run \`trainsync migrate\` first`, []);
  if (pending.length > 0) {
    throw new NotMigratedError(
      `the database at ${where} (DATABASE_URL) lacks ${pending.length} migration${pending.length === 1 ? '' : 's'} (${pending.join(', ')}): run \`trainsync migrate\` first`,
      pending,
    );
  }
}

/** Migration files not yet recorded as applied, or 'no-database'. Reads only. */
export async function pendingMigrations(pool: pg.Pool, options: MigrateOptions = {}): Promise<string[] | 'no-database'> {
  const sqlDir = options.sqlDir ?? SQL_DIR;
  const migrations = await readMigrations(path.join(sqlDir, 'migrations'));
  let applied: Set<string>;
  try {
    const { rows: table } = await pool.query<{ present: boolean }>("select to_regclass('trainsync.schema_migrations') is not null as present");
    if (!table[0]?.present) return migrations.map((m) => m.name);
    const { rows } = await pool.query<{ name: string }>('select name from trainsync.schema_migrations');
    applied = new Set(rows.map((row) => row.name));
  } catch (error) {
    if ((error as { code?: unknown }).code === MISSING_DATABASE) return 'no-database';
    throw error;
  }
  return migrations.filter((m) => !applied.has(m.name)).map((m) => m.name);
}
