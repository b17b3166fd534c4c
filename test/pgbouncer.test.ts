import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli } from './helpers/cli.ts';
import { createTestDatabase, WORKER_LOGIN, type TestDatabase } from './helpers/db.ts';
import { feedDir, rowsFromState, toCsv } from './helpers/hr-feed.ts';
import { startPgBouncer, type OwnPgBouncer } from './helpers/pgbouncer.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import {
  simulatorCourses,
  simulatorFilters,
  simulatorResults,
  simulatorUsers,
  warehouseCourses,
  warehouseFilters,
  warehouseResults,
  warehouseUsers,
} from './helpers/warehouse-compare.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * trainsync behind PgBouncer in transaction mode: DATABASE_URL through a PgBouncer of the
 * test's own with 3 server connections for a worker pool of 6 and the CLI's (so clients
 * share server connections transaction by transaction, and nothing may rely on a session),
 * the lock session straight to Postgres (TRAINSYNC_LOCK_DATABASE_URL). A real worker process
 * syncs every resource and applies a provisioning feed; the warehouse equals the platform.
 */
describe('behind PgBouncer (transaction pooling)', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let bouncer: OwnPgBouncer;
  let worker: WorkerProcess | undefined;
  let env: Record<string, string>;
  const prefix = testPrefix();
  const files = feedDir();

  beforeAll(async () => {
    [sim, database, bouncer] = await Promise.all([
      startSimulator({ seed: 31, sizes: { users: 30, groups: 3, courses: 6, results: 900 } }),
      createTestDatabase({ migrated: false }),
      startPgBouncer({ poolMode: 'transaction', poolSize: 3 }),
    ]);
    env = {
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      // trainsync's own login through the pool; the owner straight to Postgres (`migrate` creates the login).
      DATABASE_URL: bouncer.url(database.name, WORKER_LOGIN),
      // Session advisory locks and the migrator's lock need a real session.
      TRAINSYNC_LOCK_DATABASE_URL: database.url,
      TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
      TRAINSYNC_PG_POOL_SIZE: '6',
      REDIS_URL,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_REQUESTS_PER_SECOND: '500',
      TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
      TRAINSYNC_METRICS_PORT: '0',
      // Several windows and writers at once: transactions of one job on different server connections.
      TRAINSYNC_RESULTS_WINDOW_DAYS: '30',
      TRAINSYNC_BATCH_ROWS: '100',
      LOG_FORMAT: 'json',
      // Info: the worker's "worker started" line tells the test it is ready.
      LOG_LEVEL: 'info',
    };
  });
  afterAll(async () => {
    worker?.child.kill('SIGKILL');
    await worker?.exited;
    await Promise.all([sim?.close(), dropPrefix(prefix)]);
    await database?.drop();
    await bouncer?.close();
    files.cleanup();
  });

  it('migrates, syncs every resource and applies a feed; the warehouse equals the platform', async () => {
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);

    worker = startWorkerProcess(env, ['--no-schedules']);
    await worker.ready;
    const synced = await runCli(['sync', 'all', '--json'], env);
    expect(synced.code, `${synced.stdout}\n${synced.stderr}\n${worker.output()}`).toBe(0);

    expect(await warehouseResults(database.pool)).toEqual(simulatorResults(sim.state));
    expect(await warehouseCourses(database.pool)).toEqual(simulatorCourses(sim.state));
    expect(await warehouseFilters(database.pool)).toEqual(simulatorFilters(sim.state));
    expect(await warehouseUsers(database.pool)).toEqual(simulatorUsers(sim.state));
    const { rows: groups } = await database.pool.query<{ n: number }>('select count(*)::int as n from training.groups');
    expect(groups[0]?.n).toBe(sim.state.groups.length);
    const { rows: seats } = await database.pool.query<{ n: number }>('select count(*)::int as n from training.seat_usage');
    expect(seats[0]?.n).toBe(1);

    // A feed: everyone as they are, one joiner in a group, one leaver.
    const rows = rowsFromState(sim.state);
    const leaver = rows.find((r) => r.status === 'active')!;
    leaver.status = 'inactive';
    const group = sim.state.groups[0]!;
    const joiner = { employee_id: 'PGB1', email: 'pg.bouncer@acme-training.example', first_name: 'Pg', last_name: 'Bouncer', status: 'active', groups: [group.id], role: 'USER', organisation_identifier: 'PGB1' };
    const provisioned = await runCli(['provision', files.write('hr.csv', toCsv([...rows, joiner]))], env);
    expect(provisioned.code, `${provisioned.stdout}\n${provisioned.stderr}`).toBe(0);
    const done = async (): Promise<true | undefined> => {
      const { rows: open } = await database.pool.query<{ n: number }>("select count(*)::int as n from trainsync.provisioning_actions where status <> 'succeeded'");
      const { rows: all } = await database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.provisioning_actions');
      return open[0]?.n === 0 && (all[0]?.n ?? 0) >= 3 ? true : undefined;
    };
    await waitFor(done, 60_000, 'every provisioning action to succeed');
    const created = sim.state.users.find((u) => u.email === joiner.email);
    expect(created?.hasAccess).toBe(true);
    expect(group.memberIds.has(created!.id)).toBe(true);
    expect(sim.state.users.find((u) => u.email === leaver.email)?.hasAccess).toBe(false);
    const { rows: employees } = await database.pool.query<{ n: number }>('select count(*)::int as n from training.employees');
    expect(employees[0]?.n).toBe(rows.length + 1);

    // The platform's accounts as they are now, synced again through PgBouncer.
    const again = await runCli(['sync', 'users'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(await warehouseUsers(database.pool)).toEqual(simulatorUsers(sim.state));

    // PgBouncer carried the warehouse's traffic (its log names the database's logins).
    expect(bouncer.log()).toContain(`db=${database.name}`);
    // …as trainsync's own login, never the owner's.
    expect(bouncer.log()).toContain(`db=${database.name} user=${WORKER_LOGIN}`);
    expect(bouncer.log()).not.toContain(`db=${database.name} user=postgres`);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    worker = undefined;
  });
});
