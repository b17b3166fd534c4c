import type { Kysely } from 'kysely';
import type { App } from '../../src/runtime/app.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createDb, createPool } from '../../src/warehouse/pool.ts';
import { lendFrom, type PgLender } from '../../src/warehouse/transaction.ts';
import { createScopes, type OrgScope } from '../../src/warehouse/scope.ts';
import { createLogger } from '../../src/runtime/log.ts';

interface Owner {
  db: Kysely<Database>;
  withPgClient: PgLender;
  /** One organisation's handle as the owner, for calling a store as that organisation. */
  scope(org: string): OrgScope;
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
    const scopes = createScopes(pool, createLogger('silent'), { rowSecurity: false });
    found = { db: createDb(pool), withPgClient: lendFrom(pool), scope: (org) => scopes.scope(org) };
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
