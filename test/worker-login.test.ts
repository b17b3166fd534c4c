import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { checkWorkerLoginLines } from '../src/commands/doctor/doctor-sessions.ts';
import { loadConfig } from '../src/config.ts';
import { createApp, type App } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { openAppScopes } from '../src/warehouse/app-role.ts';
import { scramVerifier } from '../src/warehouse/worker-login.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, databaseEnv, WORKER_LOGIN, withAdmin, type TestDatabase } from './helpers/db.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * trainsync's own database login (docs/security.md, "trainsync's own database login"): the
 * connections of the app as createApp builds them, and of the CLI's commands, log in as a
 * login that is no superuser, has no BYPASSRLS and owns no table, so a statement that resets
 * its role (or tries to become the owner) is still bound by row security. `doctor` fails on a
 * login that could get past it, naming the fix. Real Postgres and Redis.
 */

const HASH = 'f'.repeat(64);
let t: TestDatabase;
let app: App;
const prefix = testPrefix();

/** Rolled back whatever `fn` did (a RESET ROLE too): the pooled connection is left as it was. */
class Rollback extends Error {}
async function rolledBack(org: string, fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  await app.scopes
    .scope(org)
    .transaction(async ({ client }) => {
      await fn(client);
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
}

const env = (more: Record<string, string> = {}): Record<string, string> => ({
  ...databaseEnv(t),
  REDIS_URL,
  TRAINSYNC_QUEUE_PREFIX: prefix,
  TRAINSYNC_METRICS_PORT: '0',
  TRAINSYNC_SECRET_KEY: 'a'.repeat(64),
  LOG_LEVEL: 'warn',
  ...more,
});

beforeAll(async () => {
  t = await createTestDatabase();
  for (const org of ['north', 'south']) {
    await t.pool.query('insert into training.organisations (slug, name) values ($1, $1) on conflict do nothing', [org]);
    await t.pool.query(`insert into trainsync.feeds (org, hash, path, format, mode, rows, errors) values ($1, $2, 'feed.csv', 'csv', 'full', 1, 0)`, [org, HASH]);
  }
  app = await createApp(loadConfig(env()), createLogger('silent'), { jobs: allJobs });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await dropPrefix(prefix);
  await t?.drop();
});

describe("trainsync's own database login", () => {
  it("the app's connections log in as a login that is no superuser, has no BYPASSRLS, and owns no table nor may become an owner", async () => {
    const seen = await app.scopes.scope('north').lend(async (client) => {
      const { rows } = await client.query<{ login: string; role: string; rolsuper: boolean; rolbypassrls: boolean; owned: number }>(
        `select session_user::text as login, current_user::text as role, r.rolsuper, r.rolbypassrls,
                (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
                 where n.nspname in ('training', 'trainsync') and pg_has_role(session_user, c.relowner, 'MEMBER')) as owned
         from pg_roles r where r.rolname = session_user`,
      );
      return rows[0];
    });
    expect(seen).toEqual({ login: WORKER_LOGIN, role: 'trainsync_app', rolsuper: false, rolbypassrls: false, owned: 0 });
  });

  it("the CLI's commands connect as the same login (openAppScopes, as load-feed, reconcile and migrate open it)", async () => {
    const opened = await openAppScopes(loadConfig(env()).DATABASE_URL, createLogger('silent'), 1);
    try {
      const { rows } = await opened.scopes.scope('north').lend((client) => client.query<{ login: string; rolsuper: boolean }>('select session_user::text as login, r.rolsuper from pg_roles r where r.rolname = session_user'));
      expect(rows[0]).toEqual({ login: WORKER_LOGIN, rolsuper: false });
    } finally {
      await opened.close();
    }
  });

  it('RESET ROLE inside a scoped transaction returns to the login, which row security still binds: no other organisation is read or written', async () => {
    await rolledBack('north', async (client) => {
      await client.query('reset role');
      expect((await client.query<{ role: string }>('select current_user::text as role')).rows[0]?.role).toBe(WORKER_LOGIN);
      expect((await client.query<{ org: string }>('select distinct org from trainsync.feeds order by 1')).rows.map((r) => r.org)).toEqual(['north']);
      expect((await client.query<{ slug: string }>("select slug from training.organisations where slug in ('north', 'south')")).rows.map((r) => r.slug)).toEqual(['north']);
      // Nor write one: WITH CHECK refuses the other organisation's row.
      await client.query('savepoint probe');
      await expect(client.query(`insert into trainsync.feeds (org, hash, path, format, mode, rows, errors) values ('south', $1, 'x.csv', 'csv', 'full', 1, 0)`, ['e'.repeat(64)])).rejects.toMatchObject({ code: '42501' });
      await client.query('rollback to savepoint probe');
      // Nor turn the tables' row security off: it owns none of them.
      await expect(client.query('alter table trainsync.feeds no force row level security')).rejects.toMatchObject({ code: '42501' });
    });
    // The same, as set_config writes it inside a statement.
    await rolledBack('north', async (client) => {
      const { rows } = await client.query<{ org: string }>("select set_config('role', 'none', true), org from trainsync.feeds");
      expect(new Set(rows.map((r) => r.org))).toEqual(new Set(['north']));
      expect((await client.query<{ n: number }>("select count(*)::int as n from trainsync.feeds where org = 'south'")).rows[0]?.n).toBe(0);
    });
  });

  it('SET ROLE to the owner (or any superuser) is refused: the login is a member of trainsync_app only', async () => {
    await rolledBack('north', async (client) => {
      await expect(client.query('set role postgres')).rejects.toMatchObject({ code: '42501' });
    });
    await rolledBack('north', async (client) => {
      await expect(client.query("select set_config('role', 'postgres', true)")).rejects.toMatchObject({ code: '42501' });
    });
  });

  it('row security is forced on every table with an organisation (its owner bound too, unless a superuser)', async () => {
    const { rows } = await t.pool.query<{ name: string }>(
      `select n.nspname || '.' || c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname in ('training', 'trainsync') and c.relkind in ('r', 'p')
         and (exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org' and not a.attisdropped) or c.relname = 'organisations')
         and not (c.relrowsecurity and c.relforcerowsecurity)`,
    );
    expect(rows).toEqual([]);
  });
});

describe('doctor on the login of DATABASE_URL', () => {
  it('ok for trainsync_worker; FAIL for a superuser DATABASE_URL, naming TRAINSYNC_OWNER_DATABASE_URL (exit 1)', async () => {
    const good = await runCli(['doctor', '--json'], env());
    const goodLines = JSON.parse(good.stdout) as { check: string; level: string; detail: string; fix?: string }[];
    expect(goodLines.find((l) => l.check === 'login'), good.stdout).toMatchObject({ level: 'ok', detail: expect.stringContaining(`the login ${WORKER_LOGIN} of DATABASE_URL cannot bypass row security`) as unknown });

    const run = await runCli(['doctor', '--json'], env({ DATABASE_URL: t.ownerUrl }));
    expect(run.code, run.stderr).toBe(1);
    const lines = JSON.parse(run.stdout) as { check: string; level: string; detail: string; fix?: string }[];
    const login = lines.filter((l) => l.check === 'login');
    expect(login[0]).toMatchObject({ level: 'fail', detail: expect.stringMatching(/^the login postgres of DATABASE_URL is a superuser/) as unknown });
    expect(login[0]?.fix).toContain('TRAINSYNC_OWNER_DATABASE_URL');
    expect(login[0]?.fix).toContain('GRANT trainsync_app TO trainsync_worker');
    expect(run.stderr).toMatch(/doctor: \d+ checks? failed \(first: login: /);
  });

  it('FAIL for BYPASSRLS, for a member of a role owning a table, and for a table whose row security is not forced, each with its statement', async () => {
    const suffix = randomBytes(4).toString('hex');
    const bypass = `lg_bypass_${suffix}`;
    const member = `lg_member_${suffix}`;
    const owner = `own_${suffix}`;
    const config = (login: string): ReturnType<typeof loadConfig> => {
      const url = new URL(t.url);
      url.username = login;
      return loadConfig({ ...env(), DATABASE_URL: url.toString() });
    };
    await withAdmin(async (admin) => {
      await admin.query(`create role ${bypass} login bypassrls; grant trainsync_app to ${bypass}`);
      await admin.query(`create role ${owner} nologin; create role ${member} login; grant trainsync_app to ${member}; grant ${owner} to ${member}`);
    });
    try {
      const byp = await checkWorkerLoginLines(config(bypass));
      expect(byp).toEqual([{ check: 'login', level: 'fail', detail: `the login ${bypass} of DATABASE_URL has BYPASSRLS: row security does not bind it`, fix: `as a superuser: ALTER ROLE ${bypass} NOBYPASSRLS` }]);

      await t.pool.query(`alter table trainsync.feeds owner to ${owner}`);
      const mem = await checkWorkerLoginLines(config(member));
      expect(mem).toMatchObject([{ check: 'login', level: 'fail', detail: expect.stringContaining(`is a member of ${owner}, which owns trainsync's tables`) as unknown, fix: `REVOKE ${owner} FROM ${member}` }]);
      await t.pool.query('alter table trainsync.feeds owner to postgres');

      await t.pool.query('alter table trainsync.feeds no force row level security');
      const unforced = await checkWorkerLoginLines(config(WORKER_LOGIN));
      expect(unforced).toMatchObject([{ check: 'login', level: 'fail', detail: 'row security is not forced on trainsync.feeds: their owner is not bound by it', fix: expect.stringContaining('ALTER TABLE trainsync.feeds FORCE ROW LEVEL SECURITY') as unknown }]);
      expect(unforced[0]?.fix).toContain('`trainsync migrate`');
    } finally {
      await t.pool.query('alter table trainsync.feeds owner to postgres; alter table trainsync.feeds force row level security');
      await withAdmin((admin) => admin.query(`drop role if exists ${bypass}; drop role if exists ${member}; drop role if exists ${owner}`));
    }
  });

  it('an app whose DATABASE_URL is a superuser keeps running (one login for both, as before) and warns once at start', async () => {
    const { log, lines } = capturingLogger('warn');
    const config = loadConfig({ ...env(), DATABASE_URL: t.ownerUrl, TRAINSYNC_OWNER_DATABASE_URL: '' });
    expect(config.TRAINSYNC_OWNER_DATABASE_URL).toBe(t.ownerUrl);
    const first = await createApp(config, log, { jobs: allJobs });
    const second = await createApp(config, log, { jobs: allJobs });
    await Promise.all([first.close(), second.close()]);
    const warned = lines.filter((l) => l.includes('row security does not bind trainsync'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('the login postgres of DATABASE_URL is a superuser');
    expect(warned[0]).toContain('TRAINSYNC_OWNER_DATABASE_URL');
  });
});

describe('a password for the worker login', () => {
  it('is sent as a SCRAM-SHA-256 verifier that Postgres accepts, never as the password', async () => {
    const login = `lg_scram_${randomBytes(4).toString('hex')}`;
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const verifier = scramVerifier(password);
    expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(verifier).not.toContain(password);
    await withAdmin(async (admin) => {
      await admin.query(`create role ${login} login password ${admin.escapeLiteral(verifier)}`);
    });
    try {
      // Stored as given: what the server keeps is the verifier itself, not a hash of it.
      const stored = await withAdmin((admin) => admin.query<{ rolpassword: string }>('select rolpassword from pg_authid where rolname = $1', [login]));
      expect(stored.rows[0]?.rolpassword).toBe(verifier);
    } finally {
      await withAdmin((admin) => admin.query(`drop role if exists ${login}`));
    }
  });
});
