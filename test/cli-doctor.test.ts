import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, stderrSaid } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { freePort } from './helpers/own-services.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';

/** `trainsync doctor`: a good set-up passes; each broken piece fails on its own line, with the fix. */
describe('trainsync doctor', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let worker: WorkerProcess | undefined;
  const prefix = testPrefix();
  const env = (): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0', TRAINSYNC_SECRET_KEY: 'a'.repeat(64) });
  /** The line of one check, e.g. `FAIL  redis  cannot connect…`. */
  const line = (stdout: string, check: string): string => stdout.split('\n').find((l) => new RegExp(`^(ok|warn|FAIL)\\s+${check}\\s`).test(l)) ?? `(no ${check} line)`;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 3 });
    database = await createTestDatabase();
  });
  afterAll(async () => {
    worker?.child.kill('SIGTERM');
    await worker?.exited;
    await sim?.close();
    await database?.drop();
    await dropPrefix(prefix);
  });

  it('a good set-up, with its worker running: every check ok or a warning, exit 0', async () => {
    worker = startWorkerProcess(env());
    await worker.ready;
    const run = await runCli(['doctor'], env());
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).not.toMatch(/^FAIL/m);
    expect(line(run.stdout, 'postgres')).toMatch(/^ok\s+postgres\s+reachable at .*, PostgreSQL \d+/);
    expect(line(run.stdout, 'migrations')).toMatch(/^ok\s+migrations\s+every migration applied/);
    expect(line(run.stdout, 'reader role')).toMatch(/^ok/);
    expect(line(run.stdout, 'redis')).toMatch(/^ok\s+redis\s+reachable at redis:\/\/127\.0\.0\.1:6379, Redis \d+/);
    expect(line(run.stdout, 'redis memory')).toMatch(/^ok\s+redis memory\s+maxmemory-policy noeviction/);
    expect(line(run.stdout, 'redis persistence')).toMatch(/^(ok|warn)\s+redis persistence\s+(on|off)/);
    expect(line(run.stdout, 'platform')).toMatch(/^ok\s+platform\s+.* accepted the key; page size seen \d+/);
    expect(line(run.stdout, 'platform seats')).toMatch(/^ok\s+platform seats\s+offered: \d+ in use of \d+/);
    expect(line(run.stdout, 'worker')).toMatch(/^ok\s+worker\s+alive: /);
    expect(line(run.stdout, 'schedules')).toMatch(/^ok\s+schedules\s+6 registered, as configured/);
    expect(line(run.stdout, 'webhooks')).toMatch(/^ok\s+webhooks\s+off/);
    worker.child.kill('SIGTERM');
    await worker.exited;
    worker = undefined;
  });

  it('a closed Redis port fails, naming the URL (password masked) and how to start it', async () => {
    const port = await freePort();
    const run = await runCli(['doctor'], { ...env(), REDIS_URL: `redis://:hunter2@127.0.0.1:${port}` });
    expect(run.code).toBe(1);
    expect(line(run.stdout, 'redis')).toMatch(new RegExp(`^FAIL\\s+redis\\s+cannot connect to Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): connection refused`));
    expect(run.stdout).toContain('docker compose up -d postgres redis');
    expect(`${run.stdout}${run.stderr}`).not.toContain('hunter2');
    // Postgres is still checked on its own line.
    expect(line(run.stdout, 'postgres')).toMatch(/^ok/);
    expect(stderrSaid(run.stderr).trim().split('\n').at(-1)).toMatch(/^trainsync: doctor: 1 check failed/);
  });

  it('a missing migration fails with "run trainsync migrate first" (exit 2), and doctor applies nothing', async () => {
    const behind = await createTestDatabase();
    try {
      // As if the newest migration had not been applied yet.
      const { rows: newest } = await behind.pool.query<{ name: string }>('delete from trainsync.schema_migrations where name = (select max(name) from trainsync.schema_migrations) returning name');
      const run = await runCli(['doctor'], { ...env(), DATABASE_URL: behind.url, TRAINSYNC_OWNER_DATABASE_URL: behind.ownerUrl });
      expect(run.code).toBe(2);
      expect(line(run.stdout, 'migrations')).toBe(`FAIL  migrations        1 (${newest[0]!.name}) not applied`);
      expect(run.stdout).toContain('run `trainsync migrate` first');
      const { rowCount } = await behind.pool.query('select 1 from trainsync.schema_migrations where name = $1', [newest[0]!.name]);
      expect(rowCount).toBe(0);
    } finally {
      await behind.drop();
    }
  });

  it('a database never migrated: all migrations pending, and nothing created', async () => {
    const fresh = await createTestDatabase({ migrated: false });
    try {
      const run = await runCli(['doctor'], { ...env(), DATABASE_URL: fresh.url, TRAINSYNC_OWNER_DATABASE_URL: fresh.ownerUrl });
      expect(run.code).toBe(2);
      expect(line(run.stdout, 'migrations')).toMatch(/^FAIL\s+migrations\s+\d+ \(0001_warehouse\.sql … \d{4}_\w+\.sql\) not applied/);
      const { rows } = await fresh.pool.query<{ present: boolean }>("select to_regclass('trainsync.schema_migrations') is not null as present");
      expect(rows[0]!.present).toBe(false);
    } finally {
      await fresh.drop();
    }
  });

  it('a bad cron line fails, naming the variable, before any connection', async () => {
    const run = await runCli(['doctor'], { ...env(), TRAINSYNC_CRON_RESULTS: '0 25 * * *', REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(2);
    expect(line(run.stdout, 'config')).toMatch(/^FAIL\s+config\s+TRAINSYNC_CRON_RESULTS: got "0 25 \* \* \*"; expected a valid cron line/);
    expect(run.stdout).not.toMatch(/^\S+\s+redis\s/m);
  });

  it('a key the platform refuses fails', async () => {
    const run = await runCli(['doctor'], { ...env(), TRAINSYNC_API_KEY: 'not-the-key' });
    expect(run.code).toBe(2);
    expect(line(run.stdout, 'platform')).toMatch(/^FAIL\s+platform\s+.* refused the key \(401/);
    expect(run.stdout).not.toContain('not-the-key');
  });

  it('--json has every check', async () => {
    const run = await runCli(['doctor', '--json'], { ...env(), TRAINSYNC_API_KEY: 'not-the-key' });
    const checks = JSON.parse(run.stdout) as Array<{ check: string; level: string }>;
    expect(checks.map((c) => c.check)).toEqual(expect.arrayContaining(['config', 'postgres', 'migrations', 'reader role', 'redis', 'redis memory', 'redis persistence', 'platform', 'worker', 'schedules', 'webhooks']));
    expect(checks.find((c) => c.check === 'platform')?.level).toBe('fail');
  });
});

