import { openAppScopes, ownerRefusal } from '../warehouse/app-role.ts';
import { ensureWorkerLogin, loginOf } from '../warehouse/worker-login.ts';
import type { Command } from 'commander';
import type { Config } from '../config.ts';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import type { Logger } from '../runtime/log.ts';
import { ensureDatabase } from '../warehouse/ensure-database.ts';
import { migrate } from '../warehouse/migrator.ts';
import { createDb, createOwnerPool } from '../warehouse/pool.ts';
import { registerOrganisations } from '../warehouse/organisations.ts';
import { ensureOrgReaders } from '../warehouse/org-readers.ts';

export interface MigrateCommandDeps {
  loadConfig(): Config;
  createLogger(config: Config): Logger;
}

/** `trainsync migrate`: creates the database if missing, applies migrations and views. */
export function registerMigrateCommand(program: Command, deps: MigrateCommandDeps): void {
  program
    .command('migrate')
    .description('Create the database if missing, apply new sql/migrations and re-apply sql/views. Safe to run twice.')
    .addHelpText(
      'after',
      `
Connects as the tables' owner, TRAINSYNC_OWNER_DATABASE_URL (default: DATABASE_URL when
that is set, else postgres://postgres@127.0.0.1:5432/trainsync); the database is created
when it does not exist. trainsync's own login, DATABASE_URL's (default trainsync_worker),
is created when missing and the owner may create roles (LOGIN, no superuser, no
BYPASSRLS, a member of trainsync_app, owning nothing), with the URL's password if any. Migrations (sql/migrations/NNNN_name.sql)
apply in order, each in its own transaction, and are recorded with a checksum in
trainsync.schema_migrations. An applied migration whose file has changed is refused:
migrations are append-only, add a new numbered file instead. Views (sql/views/*.sql)
are re-created every time, in one transaction. Concurrent runs wait for each other
(an advisory lock), so every worker may run this at start.

Creates the read-only role trainsync_reader (NOLOGIN) with SELECT on schema training;
let a BI login use it with: GRANT trainsync_reader TO <login>;
With TRAINSYNC_ORGS_FILE, an organisation with "reader" gets a role of its own
(trainsync_reader_<slug>, NOLOGIN) that sees only its rows (row-level security):
GRANT trainsync_reader_<slug> TO <client's BI login>;

Prints the migrations applied to stdout; logs go to stderr.`,
    )
    .action(async () => {
      const config = deps.loadConfig();
      const log = deps.createLogger(config);
      // Every pg client here has an 'error' listener (ensureDatabase's, createPool's), so a
      // server going away fails the command with one line naming DATABASE_URL, never an
      // unhandled 'error' event.
      const pool = createOwnerPool(config.TRAINSYNC_OWNER_DATABASE_URL, { max: 1, log });
      try {
        await ensureDatabase(config.TRAINSYNC_OWNER_DATABASE_URL, log);
        const { applied, views } = await migrate(pool, log, { reapplyViews: true });
        await registerOrganisations(createDb(pool), config.orgs);
        const readers = config.orgs.flatMap((org) => (org.readerRole ? [{ slug: org.slug, readerRole: org.readerRole }] : []));
        const created = await ensureOrgReaders(pool, readers);
        const worker = await ensureWorkerLogin(pool, config.DATABASE_URL, log);
        // The login must be able to take trainsync_app, the role every later connection runs as: refused now (exit 2), with the fix.
        await (await openAppScopes(config.DATABASE_URL, log, 1)).close();
        const lines = applied.length === 0 ? ['migrations: up to date'] : applied.map((name) => `applied ${name}`);
        lines.push(`views: ${views} applied`);
        const login = loginOf(config.DATABASE_URL);
        if (login && login !== loginOf(config.TRAINSYNC_OWNER_DATABASE_URL)) lines.push(`login ${login}: trainsync's own${worker === 'created' ? ' (created)' : ''}`);
        for (const reader of readers) lines.push(`reader ${reader.readerRole}: sees only ${reader.slug}${created.includes(reader.readerRole) ? ' (created)' : ''}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      } catch (error) {
        throw ownerRefusal(error, config) ?? toInfrastructureError(error, config, 'postgres') ?? error;
      } finally {
        await pool.end().catch(() => undefined);
      }
    });
}
