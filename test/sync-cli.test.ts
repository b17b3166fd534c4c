import { spawn } from 'node:child_process';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { runCli } from './helpers/cli.ts';
import { ADMIN_URL, databaseUrl } from './helpers/db.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';
import { waitFor } from './helpers/worker-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `trainsync sync` as an operator runs it: exit statuses, refusals, Ctrl-C, and errors a person can act on. */
describe('trainsync sync (the command)', () => {
  let h: SyncHarness;
  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 1_500 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('without TRAINSYNC_API_URL it says so before touching Postgres or Redis', async () => {
    const name = `trainsync_never_${randomBytes(4).toString('hex')}`;
    const run = await runCli(['sync', 'courses'], { DATABASE_URL: databaseUrl(name), REDIS_URL: 'redis://127.0.0.1:1' });
    // Configuration refused: the table's 2.
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('TRAINSYNC_API_URL: missing');
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      expect((await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('a database it cannot log in to is named by its setting, password masked, in one line', async () => {
    const url = new URL(ADMIN_URL);
    url.username = 'nobody';
    url.password = 'hunter2';
    const run = await runCli(['status'], { DATABASE_URL: url.toString() });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/DATABASE_URL/);
    expect(run.stderr).toContain('nobody:***@');
    expect(run.stderr).not.toContain('hunter2');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses with exit 2 a sync whose resource is already queued with other options', async () => {
    const queued = await h.app.queue.add('sync-results', { trigger: 'schedule', full: true }, { org: DEFAULT_ORG, dedupeId: 'sync-results' });
    try {
      const run = await runCli(['sync', 'results', '--since', '2024-01-01', '--until', '2024-01-31'], h.env);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`sync-results is already waiting (job ${queued.id}) with --full; this request (--since 2024-01-01 --until 2024-01-31) was not enqueued`);
    } finally {
      await h.app.queue.queues[SYNC_QUEUE].obliterate({ force: true });
    }
  });

  it('exits 3 and says INCOMPLETE when a run could not read everything; the next run exits 0', async () => {
    h.sim.setFaults({ removeEvery: 1 });
    const incomplete = await runCli(['sync', 'results', '--full'], h.env);
    h.sim.setFaults({ removeEvery: 0 });
    expect(incomplete.code).toBe(3);
    expect(incomplete.stdout).toMatch(/results\s*│\s*INCOMPLETE/);
    expect(incomplete.stdout).toContain('the next run reads them again');
    const next = await runCli(['sync', 'results'], h.env);
    expect(next.code).toBe(0);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });

  it('Ctrl-C hands an in-process job back to the queue (exit 130); the next sync resumes it', async () => {
    await h.database.pool.query('truncate training.results, training.result_filter_answers, trainsync.watermarks, trainsync.checkpoints, trainsync.unfinished_windows');
    h.sim.setFaults({ latencyMs: 150 });
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), 'sync', 'results'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...h.env, TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_BATCH_ROWS: '100' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Interrupt once some rows are in.
    await waitFor(async () => {
      const { rows } = await h.database.pool.query<{ n: number }>('select count(*)::int as n from training.results');
      return rows[0]!.n > 0 ? true : undefined;
    }, 30_000, 'the first results rows');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    // This process ran it: it went back to the queue, and the line says so (a worker's job would be said to go on there).
    expect(stderr).toContain('interrupted: stopped waiting; results back in the queue: the next `trainsync sync` or a worker resumes it from its checkpoint');
    const jobId = await h.app.queue.queues[SYNC_QUEUE].getDeduplicationJobId('sync-results');
    expect(jobId).toBeTruthy();
    // Handed back, not left active without a lock.
    expect(['delayed', 'waiting', 'prioritized']).toContain(await h.app.queue.state(SYNC_QUEUE, jobId!));

    h.sim.setFaults({ latencyMs: 0 });
    const resumed = await runCli(['sync', 'results'], h.env);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/results\s*│\s*ok/);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });
});
