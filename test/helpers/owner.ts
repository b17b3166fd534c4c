import type { Kysely } from 'kysely';
import type { App } from '../../src/runtime/app.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createDb, createPool } from '../../src/warehouse/pool.ts';
import { lendFrom, type PgLender } from '../../src/warehouse/transaction.ts';

interface Owner {
  db: Kysely<Database>;
  withPgClient: PgLender;
}

const owners = new WeakMap<App, Owner>();

/**
 * The owner of the tables' handle on an app's database, for a test that seeds or
 * inspects rows of any organisation: the app itself runs as trainsync_app, bound by
 * row-level security. Ended with the app.
 */
export function owner(app: App): Owner {
  let found = owners.get(app);
  if (!found) {
    const pool = createPool(app.config.TRAINSYNC_OWNER_DATABASE_URL, { max: 3, applicationName: 'trainsync-test-owner' });
    found = { db: createDb(pool), withPgClient: lendFrom(pool) };
    owners.set(app, found);
    const close = app.close.bind(app);
    app.close = async () => {
      try {
        await close();
      } finally {
        await pool.end().catch(() => undefined);
      }
    };
  }
  return found;
}
