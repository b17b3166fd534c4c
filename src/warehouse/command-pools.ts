import type { Logger } from 'pino';
import { maskUrl } from '../lib/infra-errors.ts';
import { ensureDatabase } from './ensure-database.ts';
import { migrate, requireMigrated } from './migrator.ts';
import { createOwnerPool, createPool } from './pool.ts';
import { ensureWorkerLogin } from './worker-login.ts';

/**
 * The pool work of a command that runs without an App (`reconcile`, `load-feed`), each on
 * a pool of its own that ends with it: the commands never hold a pool (only the app's
 * composition and `migrate` import src/warehouse/pool.ts), and their organisation data
 * goes through openAppScopes (app-role.ts) as anyone else's.
 */

/**
 * Refuses a database that is missing or lacks migrations (NotMigratedError: "run
 * `trainsync migrate` first"), over DATABASE_URL's login taking no role (trainsync_app
 * may not exist yet). Reads only.
 */
export async function requireMigratedAt(databaseUrl: string, log: Logger): Promise<void> {
  const pool = createPool(databaseUrl, { max: 1, log, applicationName: 'trainsync-check' });
  try {
    await requireMigrated(pool, maskUrl(databaseUrl));
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** The owner's work before a command writes: the database created if missing, the migrations applied, trainsync's own login made. */
export async function prepareAsOwner(ownerUrl: string, databaseUrl: string, log: Logger): Promise<void> {
  const pool = createOwnerPool(ownerUrl, { max: 2, log });
  try {
    await ensureDatabase(ownerUrl, log);
    await migrate(pool, log);
    await ensureWorkerLogin(pool, databaseUrl, log);
  } finally {
    await pool.end().catch(() => undefined);
  }
}
