import { QueueEvents } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobOptions } from '../src/queue/job-options.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { addResult, allResults, removeResult, updateResult } from '../src/simulator/index.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

describe('a first full load into an empty warehouse, written by several writers', () => {
  let h: SyncHarness;
  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } },
      // Small batches, so the load is many transactions with up to three in flight.
      env: { TRAINSYNC_BATCH_ROWS: '100', TRAINSYNC_RESULTS_WRITERS: '3' },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('equals the simulator; a full reload after changes, additions and removals equals it again and marks exactly the removed', async () => {
    const first = summaryOf(await h.sync(['results'], { full: true }), 'results');
    const total = allResults(h.sim.state).length;
    expect(first).toMatchObject({ mode: 'full', status: 'succeeded', inserted: total, updated: 0, removed: 0 });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
    // The first load recorded no sightings (the removal pass, which reads them, was skipped).
    const sightings = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.result_sightings');
    expect(sightings.rows[0]!.n).toBe(0);

    const results = allResults(h.sim.state);
    const removed = [results[3]!.id, results[700]!.id, results[results.length - 1]!.id];
    for (const id of removed) removeResult(h.sim.state, id);
    updateResult(h.sim.state, results[10]!.id, { score: (results[10]!.score ?? 0) + 1 });
    updateResult(h.sim.state, results[20]!.id, { resultFilters: [] });
    addResult(h.sim.state, { dateCompleted: '2024-06-01T10:00:00.000Z' });

    const reload = summaryOf(await h.sync(['results'], { full: true }), 'results');
    expect(reload).toMatchObject({ mode: 'full', status: 'succeeded', inserted: 1, updated: 2, removed: 3 });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
    const marked = await h.database.pool.query<{ result_id: string }>('select result_id from training.results where removed_at is not null order by result_id');
    expect(marked.rows.map((r) => r.result_id)).toEqual(removed.map((id) => id.toLowerCase()).sort());
  });
});

describe('a worker killed with SIGKILL in the middle of a first full load with several writers', () => {
  let h: SyncHarness;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 4_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 20 } },
      env: {
        // One page at a time and batches of two pages: 80 pages, 40 transactions, three in flight.
        TRAINSYNC_RESULTS_CONCURRENCY: '1',
        TRAINSYNC_BATCH_ROWS: '100',
        TRAINSYNC_RESULTS_WRITERS: '3',
        TRAINSYNC_JOB_LOCK_MS: '2000',
        TRAINSYNC_STALLED_INTERVAL_MS: '1000',
      },
    });
  });
  afterEach(() => {
    for (const w of workers) w.child.kill('SIGKILL');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('never checkpoints past an uncommitted row, resumes after its checkpoint, and converges with no duplicates', async () => {
    const job = await h.app.queue.queues[SYNC_QUEUE].add(
      'sync-results',
      { trigger: 'cli', full: true },
      { ...defaultJobOptions(h.config), deduplication: { id: 'sync-results' } },
    );
    const key = `results:job:${job.id}:full`;
    // The page a restart reads first: the one holding the first position not proven read.
    const nextPage = async (): Promise<number | undefined> => {
      const { rows } = await h.database.pool.query<{ read: { cursor: number; pageSize: number } | null }>(`select value->'read' as read from trainsync.checkpoints where key = $1`, [key]);
      const read = rows[0]?.read;
      return read && read.pageSize > 0 ? Math.floor(read.cursor / read.pageSize) + 1 : undefined;
    };

    const first = startWorkerProcess(h.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(first);
    await waitFor(async () => ((await nextPage()) ?? 0) >= 20 ? true : undefined, 60_000, 'a checkpoint at page 20 or later');
    first.child.kill('SIGKILL');
    await first.exited;
    const checkpointed = (await nextPage())!;
    expect(checkpointed).toBeLessThan(81);

    // Every result on the pages before the checkpoint was committed with it (or before it).
    const stored = new Set((await h.database.pool.query<{ result_id: string }>('select result_id from training.results')).rows.map((r) => r.result_id));
    for (let page = 1; page < checkpointed; page += 1) {
      const response = await fetch(`${h.sim.url}/api/v2/results?page=${page}`, { headers: { authorization: `Bearer ${h.sim.apiKey}` } });
      const body = (await response.json()) as { entities: Array<{ id: string }> };
      for (const entity of body.entities) expect(stored.has(entity.id.toLowerCase())).toBe(true);
    }
    h.sim.resetRequests();

    const events = new QueueEvents(SYNC_QUEUE, { connection: { url: h.config.REDIS_URL }, prefix: h.config.TRAINSYNC_QUEUE_PREFIX });
    await events.waitUntilReady();
    const second = startWorkerProcess(h.env, ['--no-schedules', '--queues', 'sync']);
    workers.push(second);
    try {
      const summary = (await job.waitUntilFinished(events, 90_000)) as Record<string, unknown>;
      // Still a first load after the restart (its checkpoint says so): nothing marked removed.
      expect(summary).toMatchObject({ resource: 'results', mode: 'full', status: 'succeeded', windowsResumed: 1, removed: 0 });
      expect(summary.inserted).toBe(allResults(h.sim.state).length);
    } finally {
      await events.close();
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
    const dupes = await h.database.pool.query('select count(*)::int as n from (select result_id from training.results group by result_id having count(*) > 1) d');
    expect(dupes.rows[0]?.n).toBe(0);
    // The restarted walk began at its checkpoint: no page before it was asked for again.
    const pagesAsked = h.sim.requests.filter((r) => r.path === '/api/v2/results').map((r) => Number(new URLSearchParams(r.query).get('page') ?? '1'));
    expect(Math.min(...pagesAsked)).toBe(checkpointed);
  });
});
