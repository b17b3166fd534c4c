import { afterEach, describe, expect, it } from 'vitest';
import { allResults } from '../src/simulator/index.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { runSync, SyncConflictError } from '../src/sync/run-and-wait.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';

/** Honest outcomes: what a run could not read is said, remembered and read again. */
describe('sync outcomes', () => {
  let h: SyncHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const unfinished = async (harness: SyncHarness): Promise<string[]> =>
    (await harness.database.pool.query<{ window_key: string }>('select window_key from trainsync.unfinished_windows order by 1')).rows.map((r) => r.window_key);

  it('windows still changing after the re-read cap end the run incomplete; the next plain run reads them again and converges', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 400, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } },
      env: { TRAINSYNC_RESULTS_WINDOW_DAYS: '45', TRAINSYNC_RESULTS_CONCURRENCY: '1' },
    });
    // A first full run sets the watermark, so later plain runs are incremental.
    expect(summaryOf(await h.sync(['results']), 'results')).toMatchObject({ mode: 'full', status: 'succeeded' });

    // Every page served adds a result inside its query's range: every read of every window drifts.
    h.sim.setFaults({ driftEvery: 1, malformedResultEvery: 40 });
    const backfill = summaryOf(await h.sync(['results'], { since: '2024-01-01', until: '2024-03-31' }), 'results');
    h.sim.setFaults({ driftEvery: 0 });
    expect(backfill.status).toBe('incomplete');
    // The last window is one page: a change after its only page cannot be seen, so it counts as read.
    expect(backfill.note).toBe(
      'incomplete: 2 window(s) not read to the end (2024-01-01..2024-02-15: still changing after 3 reads; 2024-02-15..2024-03-31: still changing after 3 reads); the next run reads them again',
    );
    expect(await unfinished(h)).toEqual(['2024-01-01..2024-02-15', '2024-02-15..2024-03-31']);
    const run = await h.database.pool.query<{ status: string }>('select status from trainsync.runs where id = $1', [backfill.runId]);
    expect(run.rows[0]?.status).toBe('incomplete');

    // Each window was read three times, yet a quarantined record counts once in the run.
    const distinct = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.quarantine where run_id = $1', [backfill.runId]);
    expect(distinct.rows[0]!.n).toBeGreaterThan(0);
    expect(backfill.quarantined).toBe(distinct.rows[0]!.n);

    // The next plain run (no --full) reads the remembered windows and the warehouse converges.
    h.sim.setFaults({ malformedResultEvery: 0 });
    const next = summaryOf(await h.sync(['results']), 'results');
    expect(next).toMatchObject({ mode: 'incremental', status: 'succeeded' });
    expect(await unfinished(h)).toEqual([]);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });

  it('a full walk still changing after the cap marks nothing removed, ends incomplete, and the next plain run walks again', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 300 }, faults: { driftEvery: 1 } } });
    const first = summaryOf(await h.sync(['results']), 'results');
    expect(first).toMatchObject({ mode: 'full', status: 'incomplete', removed: 0 });
    expect(await unfinished(h)).toEqual(['full']);
    const sightings = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.result_sightings');
    expect(sightings.rows[0]!.n).toBe(0);

    h.sim.setFaults({ driftEvery: 0 });
    const second = summaryOf(await h.sync(['results']), 'results');
    expect(second).toMatchObject({ mode: 'full', status: 'succeeded' });
    expect(await unfinished(h)).toEqual([]);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });

  it('--since/--until stores exactly the UTC days asked for, though it reads a day around them', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 900, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } } });
    const summary = summaryOf(await h.sync(['results'], { since: '2024-02-01', until: '2024-02-29' }), 'results');
    const inFebruary = allResults(h.sim.state).filter((r) => r.dateCompleted !== null && r.dateCompleted >= '2024-02-01T00:00:00Z' && r.dateCompleted < '2024-03-01T00:00:00Z');
    const stored = await h.database.pool.query<{ n: number; first: Date; last: Date }>(
      'select count(*)::int as n, min(date_completed) as first, max(date_completed) as last from training.results',
    );
    expect(stored.rows[0]!.n).toBe(inFebruary.length);
    expect(stored.rows[0]!.first.getTime()).toBeGreaterThanOrEqual(Date.parse('2024-02-01T00:00:00Z'));
    expect(stored.rows[0]!.last.getTime()).toBeLessThan(Date.parse('2024-03-01T00:00:00Z'));
    expect(summary.inserted).toBe(inFebruary.length);
  });

  it('a second sync with other options is refused, naming the one queued; the same options join it', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 50 } } });
    const queued = await h.app.queue.add('sync-results', { trigger: 'schedule', since: '2024-01-01', until: '2024-01-31' }, { dedupeId: 'sync-results' });
    await expect(runSync(h.app, ['results'], syncPayloadSchema.parse({ trigger: 'cli', full: true }))).rejects.toThrow(SyncConflictError);
    await expect(runSync(h.app, ['results'], syncPayloadSchema.parse({ trigger: 'cli', full: true }))).rejects.toThrow(
      `sync-results is already waiting (job ${queued.id}) with --since 2024-01-01 --until 2024-01-31; this request (--full) was not enqueued`,
    );
    expect(await h.app.queue.state(SYNC_QUEUE, queued.id)).toBe('waiting');

    // The same options, from another trigger, join the queued job and run it here.
    const [joined] = await h.sync(['results'], { since: '2024-01-01', until: '2024-01-31' });
    expect(joined).toMatchObject({ jobId: queued.id, status: 'completed' });
  });

  it('records the run times of a snapshot as the run’s own, not its last transaction’s', async () => {
    h = await createSyncHarness({ simulator: { sizes: { courses: 120 }, faults: { latencyMs: 150 } } });
    const summary = summaryOf(await h.sync(['courses']), 'courses');
    const { rows } = await h.database.pool.query<{ ms: number }>(
      'select extract(epoch from finished_at - started_at) * 1000 as ms from trainsync.runs where id = $1',
      [summary.runId],
    );
    // Each page waited 150 ms at the simulator, inside the run's one transaction; the run spans them.
    expect(Number(summary.pages)).toBeGreaterThanOrEqual(1);
    expect(Number(rows[0]!.ms)).toBeGreaterThanOrEqual(Number(summary.pages) * 150 * 0.9);
  });

  it('a run cut off before it could be marked (its worker died, its database went away) is marked failed by the next run', async () => {
    h = await createSyncHarness({ simulator: { sizes: { courses: 10 } } });
    const { rows } = await h.database.pool.query<{ id: number }>("insert into trainsync.runs (resource, mode) values ('courses', 'snapshot') returning id");
    const summary = summaryOf(await h.sync(['courses']), 'courses');
    const runs = await h.database.pool.query<{ id: number; status: string; error: string | null }>("select id, status, error from trainsync.runs where resource = 'courses' order by id");
    expect(runs.rows).toEqual([
      { id: rows[0]!.id, status: 'failed', error: 'cut off before it finished (its worker stopped or lost the database); a later run took over' },
      { id: summary.runId, status: 'succeeded', error: null },
    ]);
  });
});
