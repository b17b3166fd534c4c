import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { logRecords, startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/**
 * The forced close at TRAINSYNC_SHUTDOWN_TIMEOUT_MS. A job that cannot stop when asked
 * (its query waits on a table another session has locked; the abort signal stops a job
 * between pages, not inside a statement) keeps the worker from closing cleanly. On
 * SIGTERM the worker waits the timeout, forces the close and exits; the job goes back
 * to the queue (its BullMQ lock expires and it is stalled back to waiting) and another
 * worker runs it.
 */
describe('a worker whose job does not stop in time', () => {
  let h: SyncHarness;
  let blocker: pg.PoolClient | undefined;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { courses: 20, results: 0, users: 10 } },
      env: {
        TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '1000',
        // Short BullMQ job locks and stall checks, so the abandoned job is taken back soon.
        TRAINSYNC_JOB_LOCK_MS: '2000',
        TRAINSYNC_STALLED_INTERVAL_MS: '1000',
        LOG_FORMAT: 'json',
      },
    });
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await blocker?.query('rollback').catch(() => undefined);
    blocker?.release();
    await h?.close();
  });

  it('forces the close after the timeout, exits, and the job goes back to the queue', async () => {
    const first = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: '0' }, ['--no-schedules', '--queues', 'sync']);
    workers.push(first);
    // Started (and migrated: its views read training.courses) before the table is locked.
    await first.ready;
    // Another session holds training.courses: the sync's upsert waits on it, inside its transaction.
    blocker = await h.database.pool.connect();
    await blocker.query('begin');
    await blocker.query('lock table training.courses in access exclusive mode');
    const job = await h.app.queue.queues[SYNC_QUEUE].add('sync-courses', { trigger: 'cli', full: false }, defaultJobOptions(h.config));
    const blockedQueries = async (): Promise<number> =>
      (
        await h.database.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike '%training.courses%'",
        )
      ).rows[0]!.n;
    await waitFor(async () => ((await blockedQueries()) > 0 ? true : undefined), 30_000, 'the sync to wait on the locked table');
    expect(await h.app.queue.state(SYNC_QUEUE, String(job.id))).toBe('active');

    first.child.kill('SIGTERM');
    const code = await first.exited;
    const lines = logRecords(first.output());
    expect(lines.map((r) => r.msg)).toContain('jobs did not stop in time; forcing close (their locks expire and another worker resumes them)');
    expect(lines.find((r) => r.msg === 'jobs did not stop in time; forcing close (their locks expire and another worker resumes them)')).toMatchObject({ timeoutMs: 1000 });
    expect(code, first.output()).toBe(0);

    // The job was not finished or failed: it is taken back by the next worker once the table is free.
    await blocker.query('rollback');
    blocker.release();
    blocker = undefined;
    expect(['active', 'waiting', 'wait']).toContain(await h.app.queue.state(SYNC_QUEUE, String(job.id)));
    const second = startWorkerProcess({ ...h.env, TRAINSYNC_METRICS_PORT: '0' }, ['--no-schedules', '--queues', 'sync']);
    workers.push(second);
    await waitFor(async () => ((await h.app.queue.state(SYNC_QUEUE, String(job.id))) === 'completed' ? true : undefined), 60_000, 'the job to complete on the second worker');
    const done = await h.app.queue.queues[SYNC_QUEUE].getJob(String(job.id));
    expect(done?.processedBy).toMatch(new RegExp(`:${second.child.pid}$`));
    const runs = await h.database.pool.query<{ status: string }>("select status from trainsync.runs where resource = 'courses' order by id");
    // The cut-off run is closed as failed by the next one, which succeeded.
    expect(runs.rows.map((r) => r.status)).toEqual(['failed', 'succeeded']);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
