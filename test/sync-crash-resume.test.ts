import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { addDays, parseWindowKey, windowQuery } from '../src/sync/results/days.ts';
import { createSyncHarness, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

describe('a worker killed with SIGKILL in the middle of a results sync', () => {
  let h: SyncHarness;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 2_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 25 } },
      env: {
        // One window at a time, so "the windows finished before the kill" is a clear set.
        TRAINSYNC_RESULTS_CONCURRENCY: '1',
        TRAINSYNC_RESULTS_WINDOW_DAYS: '7',
        // A dead worker's lock expires fast, so the restarted one takes the job over quickly.
        TRAINSYNC_JOB_LOCK_MS: '2000',
        TRAINSYNC_STALLED_INTERVAL_MS: '1000',
      },
    });
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h?.close();
  });

  it('restarts, converges with no duplicates, and re-reads at most the unfinished windows', async () => {
    const job = await h.app.queue.queues[SYNC_QUEUE].add(
      'sync-results',
      { trigger: 'cli', since: '2024-01-01', until: '2024-12-31', full: false },
      { ...defaultJobOptions(h.config), deduplication: { id: 'sync-results' } },
    );
    const prefix = `results:job:${job.id}:window:`;
    const finishedWindows = async (): Promise<string[]> =>
      (await h.database.pool.query<{ key: string }>('select key from trainsync.checkpoints where key like $1', [`${prefix}%`])).rows.map((r) =>
        r.key.slice(prefix.length),
      );

    const first = startWorkerProcess(h.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(first);
    await waitFor(async () => ((await finishedWindows()).length >= 12 ? true : undefined), 60_000, '12 finished windows');
    first.child.kill('SIGKILL');
    await first.exited;
    const doneBeforeKill = await finishedWindows();
    expect(doneBeforeKill.length).toBeGreaterThanOrEqual(12);
    expect(doneBeforeKill.length).toBeLessThan(53);
    h.sim.resetRequests();

    const events = new QueueEvents(SYNC_QUEUE, { connection: { url: h.config.REDIS_URL }, prefix: h.config.TRAINSYNC_QUEUE_PREFIX });
    await events.waitUntilReady();
    const second = startWorkerProcess(h.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(second);
    try {
      const summary = (await job.waitUntilFinished(events, 90_000)) as Record<string, unknown>;
      expect(summary).toMatchObject({ resource: 'results', mode: 'backfill', windowsResumed: doneBeforeKill.length });
      // The run's totals add up across the kill: every dated result inserted exactly once.
      expect(summary.inserted).toBe(simulatorResults(h.sim.state).filter((r) => r.dateCompleted !== null).length);
    } finally {
      await events.close();
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // Converged, field by field, with every dated result exactly once.
    const dated = simulatorResults(h.sim.state).filter((r) => r.dateCompleted !== null);
    expect(await warehouseResults(h.database.pool)).toEqual(dated);
    const dupes = await h.database.pool.query('select count(*)::int as n from (select result_id from training.results group by result_id having count(*) > 1) d');
    expect(dupes.rows[0]?.n).toBe(0);

    // No window finished before the kill was asked for again.
    const askedAgain = new Set(
      h.sim.requests.filter((r) => r.path === '/api/v2/results').map((r) => new URLSearchParams(r.query).get('startDate')),
    );
    for (const key of doneBeforeKill) {
      const start = key.split('..')[0]!;
      expect(askedAgain.has(addDays(start, -1))).toBe(false);
    }
    expect(askedAgain.size).toBeLessThanOrEqual(53 - doneBeforeKill.length);
    expect(await finishedWindows()).toEqual([]);
  });
});

describe('a worker killed with SIGKILL in the middle of a first load by windows', () => {
  let h: SyncHarness | undefined;
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h?.close();
  });

  it('resumes by window: the windows proven read before the kill are not asked for again, and every result is stored once', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 2_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 25 } },
      env: {
        // 50 pages in windows of about 2: 25 closed windows, one at a time.
        TRAINSYNC_RESULTS_WALK_WINDOW_PAGES: '2',
        TRAINSYNC_RESULTS_CONCURRENCY: '1',
        TRAINSYNC_JOB_LOCK_MS: '2000',
        TRAINSYNC_STALLED_INTERVAL_MS: '1000',
      },
    });
    const harness = h;
    const job = await harness.app.queue.queues[SYNC_QUEUE].add('sync-results', { trigger: 'cli', full: false }, { ...defaultJobOptions(harness.config), deduplication: { id: 'sync-results' } });
    const prefix = `results:job:${job.id}:window:`;
    const finishedWindows = async (): Promise<string[]> =>
      (await harness.database.pool.query<{ key: string }>('select key from trainsync.checkpoints where key like $1', [`${prefix}%`])).rows.map((r) => r.key.slice(prefix.length));

    const first = startWorkerProcess(harness.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(first);
    await waitFor(async () => ((await finishedWindows()).length >= 5 ? true : undefined), 60_000, '5 finished windows');
    first.child.kill('SIGKILL');
    await first.exited;
    const doneBeforeKill = await finishedWindows();
    expect(doneBeforeKill.length).toBeLessThan(25);
    harness.sim.resetRequests();

    const events = new QueueEvents(SYNC_QUEUE, { connection: { url: harness.config.REDIS_URL }, prefix: harness.config.TRAINSYNC_QUEUE_PREFIX });
    await events.waitUntilReady();
    const second = startWorkerProcess(harness.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(second);
    try {
      const summary = (await job.waitUntilFinished(events, 90_000)) as Record<string, unknown>;
      expect(summary).toMatchObject({ resource: 'results', mode: 'full', status: 'succeeded', windows: 25, windowsResumed: doneBeforeKill.length });
    } finally {
      await events.close();
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // Converged, field by field: every result, undated ones included, exactly once.
    expect(await warehouseResults(harness.database.pool)).toEqual(simulatorResults(harness.sim.state));
    const dupes = await harness.database.pool.query('select count(*)::int as n from (select result_id from training.results group by result_id having count(*) > 1) d');
    expect(dupes.rows[0]?.n).toBe(0);

    // No window proven read before the kill was asked for again.
    const askedAgain = new Set(
      harness.sim.requests
        .filter((r) => r.path === '/api/v2/results')
        .map((r) => new URLSearchParams(r.query))
        .map((q) => `${q.get('startDate')}..${q.get('endDate')}`),
    );
    for (const key of doneBeforeKill) {
      const window = parseWindowKey(key)!;
      const query = windowQuery(window, 'instant');
      expect(askedAgain.has(`${query.startDate}..${query.endDate}`), key).toBe(false);
    }
    expect(await finishedWindows()).toEqual([]);
  });
});
