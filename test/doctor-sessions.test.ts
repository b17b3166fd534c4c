import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli } from './helpers/cli.ts';
import { createTestDatabase, withAdmin, type TestDatabase } from './helpers/db.ts';
import { startPgBouncer, type OwnPgBouncer } from './helpers/pgbouncer.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * `trainsync doctor` on the two sessions trainsync needs: the lock session (direct, through a
 * session-mode PgBouncer: ok; through a transaction-mode one: FAIL naming the fix, exit 2)
 * and DATABASE_URL's login taking trainsync_app (a login that is not a member: FAIL with the
 * GRANT, exit 2). Real Postgres, PgBouncer processes of the test's own, Redis, the simulator.
 */

/** A check's line and the indented lines under it (the fix, wrapped). */
const block = (stdout: string, check: string): string => {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => new RegExp(`^(ok|warn|FAIL)\\s+${check}(\\s|$)`).test(l));
  if (at < 0) return `(no ${check} line)`;
  const end = lines.findIndex((l, i) => i > at && !l.startsWith(' '));
  return lines.slice(at, end < 0 ? undefined : end).map((l) => l.trim()).join(' ');
};

describe('doctor: the lock session and trainsync_app', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let transactionPool: OwnPgBouncer;
  let sessionPool: OwnPgBouncer;
  const prefix = testPrefix();
  const login = `trainsync_test_nomember_${randomBytes(4).toString('hex')}`;
  const env = (more: Record<string, string> = {}): Record<string, string> =>
    cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0', TRAINSYNC_SECRET_KEY: 'a'.repeat(64), COLUMNS: '300', ...more });

  beforeAll(async () => {
    sim = await startSimulator({ seed: 3 });
    database = await createTestDatabase();
    [transactionPool, sessionPool] = await Promise.all([startPgBouncer({ poolMode: 'transaction', poolSize: 3 }), startPgBouncer({ poolMode: 'session', poolSize: 3 })]);
    // A login that may read what doctor reads, but was never granted trainsync_app.
    await withAdmin(async (admin) => {
      await admin.query(`create role ${login} login`);
    });
    const pg = await import('pg');
    const owner = new pg.default.Client({ connectionString: database.ownerUrl });
    await owner.connect();
    try {
      await owner.query(`grant usage on schema trainsync to ${login}; grant select on trainsync.schema_migrations, trainsync.applied_views to ${login}`);
    } finally {
      await owner.end();
    }
  }, 60_000);
  afterAll(async () => {
    await sim?.close();
    await database?.drop();
    await transactionPool?.close();
    await sessionPool?.close();
    await dropPrefix(prefix);
    await withAdmin((admin) => admin.query(`drop role if exists ${login}`)).catch(() => undefined);
  });

  it('direct to Postgres, and through a session-mode pool: both ok', async () => {
    const direct = await runCli(['doctor'], env());
    expect(block(direct.stdout, 'lock session'), direct.stdout).toMatch(/^ok\s+lock session\s+postgres:\/\/.* \(DATABASE_URL \(TRAINSYNC_LOCK_DATABASE_URL is unset\)\): a session of its own/);
    expect(block(direct.stdout, 'app role')).toMatch(/^ok\s+app role\s+the login trainsync_worker takes role trainsync_app/);
    const name = new URL(database.url).pathname.slice(1);
    const session = await runCli(['doctor'], env({ TRAINSYNC_LOCK_DATABASE_URL: sessionPool.url(name) }));
    expect(block(session.stdout, 'lock session'), session.stdout).toMatch(new RegExp(`^ok\\s+lock session\\s+postgres://postgres@127\\.0\\.0\\.1:${sessionPool.port}/.*TRAINSYNC_LOCK_DATABASE_URL\\): a session of its own`));
  });

  it('through a transaction-mode pool: FAIL, naming the fix, exit 2', async () => {
    const name = new URL(database.url).pathname.slice(1);
    const run = await runCli(['doctor'], env({ TRAINSYNC_LOCK_DATABASE_URL: transactionPool.url(name) }));
    expect(run.code, run.stdout).toBe(2);
    const text = block(run.stdout, 'lock session');
    expect(text).toMatch(new RegExp(`^FAIL\\s+lock session\\s+postgres://postgres@127\\.0\\.0\\.1:${transactionPool.port}/\\S+ \\(TRAINSYNC_LOCK_DATABASE_URL\\) is not a session: .*\\(a transaction-mode pool\\)`));
    expect(text).toContain('fix: point TRAINSYNC_LOCK_DATABASE_URL at Postgres itself or at a session-mode pool (PgBouncer `pool_mode = session`)');
    // DATABASE_URL itself through the transaction-mode pool, the lock URL unset: the same failure, naming DATABASE_URL.
    const both = await runCli(['doctor'], env({ DATABASE_URL: transactionPool.url(name) }));
    expect(block(both.stdout, 'lock session'), both.stdout).toMatch(/^FAIL\s+lock session\s+.*\(DATABASE_URL \(TRAINSYNC_LOCK_DATABASE_URL is unset\)\) is not a session/);
    // Unreachable: said, with the variable to fix.
    const closed = await runCli(['doctor'], env({ TRAINSYNC_LOCK_DATABASE_URL: `postgres://postgres@127.0.0.1:1/${name}` }));
    expect(block(closed.stdout, 'lock session')).toMatch(/^FAIL\s+lock session\s+cannot connect the lock session to postgres:\/\/postgres@127\.0\.0\.1:1\/.*fix: start Postgres or the pool it names, or fix TRAINSYNC_LOCK_DATABASE_URL/);
  });

  it('a login that cannot take trainsync_app: FAIL with the GRANT, exit 2', async () => {
    const url = new URL(database.url);
    url.username = login;
    const run = await runCli(['doctor'], env({ DATABASE_URL: url.toString() }));
    expect(run.code, run.stdout).toBe(2);
    const text = block(run.stdout, 'app role');
    expect(text).toMatch(new RegExp(`^FAIL\\s+app role\\s+the login ${login} of DATABASE_URL \\(.*\\) cannot take role trainsync_app`));
    expect(text).toContain(`fix: as a superuser: GRANT trainsync_app TO ${login}`);
  });
});
