import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { startCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';
import { logRecords, startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * Several hosts, one of them lost: three worker processes (each its own connections: a
 * pool of 3 and its lock session) share six organisations' first loads through Redis and
 * Postgres alone; one is killed with SIGKILL while it runs some of them. Its jobs are taken
 * over by the others and resume from their checkpoints; every organisation's results equal
 * its platform's, none is loaded twice (the runs' counts add up to one insert per result),
 * and the workers' connections to the database stay within pool + lock session each.
 */
const ORGS = 6;
const WORKERS = 3;
const POOL = 3;

describe('several hosts, one killed mid-run', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let env: Record<string, string>;
  const prefix = testPrefix();
  const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-host-loss-'));
  const workers: WorkerProcess[] = [];
  const slugs = Array.from({ length: ORGS }, (_, i) => `client-${i + 1}`);

  beforeAll(async () => {
    [sim, database] = await Promise.all([
      startSimulator({
        seed: 41,
        sizes: { results: 1_200, users: 10, courses: 4 },
        faults: { latencyMs: 20 },
        organisations: slugs.map((slug) => ({ apiKey: `${slug}-${randomBytes(6).toString('hex')}`, name: slug })),
      }),
      createTestDatabase(),
    ]);
    const file = path.join(dir, 'orgs.json');
    writeFileSync(
      file,
      JSON.stringify({
        // 10 requests a second per key: a first load of 24 pages takes a few seconds, time for a kill.
        organisations: slugs.map((slug, i) => ({ slug, name: slug, apiUrl: sim.url, apiKey: { env: `KEY_${i}` }, requestsPerSecond: 10 })),
      }),
    );
    env = {
      DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl,
      REDIS_URL,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_ORGS_FILE: file,
      TRAINSYNC_PG_POOL_SIZE: String(POOL),
      TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
      TRAINSYNC_BATCH_ROWS: '150',
      // A dead worker's jobs are found stalled within seconds.
      TRAINSYNC_JOB_LOCK_MS: '2000',
      TRAINSYNC_STALLED_INTERVAL_MS: '1000',
      TRAINSYNC_METRICS_PORT: '0',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      ...Object.fromEntries(sim.organisations.map((o, i) => [`KEY_${i}`, o.apiKey])),
    };
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await sim?.close();
    await database?.drop();
    await dropPrefix(prefix);
    rmSync(dir, { recursive: true, force: true });
  });

  /** The jobs a worker started and has not finished, by job id. */
  const running = (w: WorkerProcess): string[] => {
    const records = logRecords(w.output());
    const finished = new Set(records.filter((r) => r.msg === 'job finished').map((r) => String(r.jobId)));
    return [...new Set(records.filter((r) => r.msg === 'job started' && r.job === 'sync-results').map((r) => String(r.jobId)))].filter((id) => !finished.has(id));
  };

  it('the others take its jobs over; every organisation loaded exactly once', async () => {
    for (let i = 0; i < WORKERS; i += 1) workers.push(startWorkerProcess(env, ['--no-schedules', '--queues', 'sync']));
    await Promise.all(workers.map((w) => w.ready));
    const sync = startCli(['sync', 'results', '--org', 'all', '--json'], env);

    // The workers' connections (application names trainsync and trainsync-locks), sampled while they work.
    let sampling = true;
    let peak = 0;
    const pids = new Set(workers.map((w) => w.child.pid));
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await database.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name in ('trainsync', 'trainsync-locks') and client_port is not null and pid <> pg_backend_pid()",
        );
        peak = Math.max(peak, rows[0]?.n ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    // Kill the worker running the most results loads, once it has committed some pages of them.
    const victim = await waitFor(
      async () => {
        const { rows } = await database.pool.query<{ n: number }>("select count(*)::int as n from trainsync.runs where resource = 'results' and status = 'running' and pages >= 3");
        if ((rows[0]?.n ?? 0) < 2) return undefined;
        const busiest = [...workers].sort((a, b) => running(b).length - running(a).length)[0]!;
        return running(busiest).length > 0 ? busiest : undefined;
      },
      90_000,
      'results loads under way on a worker',
    );
    const orphaned = running(victim);
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    const survivors = workers.filter((w) => w !== victim);

    const done = await sync.done;
    sampling = false;
    await sampler;
    expect(done.code, `${done.stdout}\n${done.stderr}`).toBe(0);

    // Every job the killed worker held was finished by a survivor.
    const finishedBySurvivors = new Set(
      survivors.flatMap((w) => logRecords(w.output()).filter((r) => r.msg === 'job finished' && r.outcome === 'completed').map((r) => String(r.jobId))),
    );
    for (const id of orphaned) expect(finishedBySurvivors.has(id), `job ${id} taken over`).toBe(true);

    for (const [i, slug] of slugs.entries()) {
      const platform = simulatorResults(sim.organisations[i]!.state);
      expect(await warehouseResults(database.pool, slug), slug).toEqual(platform);
      // None loaded twice: one finished run, whose inserts (kept across the resume) are one per result.
      const { rows: runs } = await database.pool.query<{ status: string; inserted: number }>(
        "select status, inserted from trainsync.runs where org = $1 and resource = 'results' order by id",
        [slug],
      );
      expect(runs.filter((r) => r.status === 'running'), slug).toEqual([]);
      expect(runs.filter((r) => r.status === 'succeeded'), slug).toHaveLength(1);
      expect(runs.reduce((n, r) => n + r.inserted, 0), slug).toBe(platform.length);
    }
    const { rows: dupes } = await database.pool.query<{ n: number }>('select count(*)::int as n from (select 1 from training.results group by org, result_id having count(*) > 1) d');
    expect(dupes[0]?.n).toBe(0);

    // Connections: each worker its pool and its lock session, whatever the number of organisations.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(WORKERS * (POOL + 1) + (POOL + 1));

    for (const w of survivors) w.child.kill('SIGTERM');
    expect(await Promise.all(survivors.map((w) => w.exited))).toEqual(survivors.map(() => 0));
  });
});
