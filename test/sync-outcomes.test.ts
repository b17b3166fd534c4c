import { scopedApp } from '../src/commands/options/scoped.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
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

  it('windows the rule cannot prove read end the run incomplete; the next plain run reads them again and converges', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 400, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } },
      env: { TRAINSYNC_RESULTS_WINDOW_DAYS: '45', TRAINSYNC_RESULTS_CONCURRENCY: '1' },
    });
    // A first full run sets the watermark, so later plain runs are incremental.
    expect(summaryOf(await h.sync(['results']), 'results')).toMatchObject({ mode: 'full', status: 'succeeded' });

    // Every page served removes a result already served: the reader never catches up.
    h.sim.setFaults({ removeEvery: 1, malformedResultEvery: 40 });
    const backfill = summaryOf(await h.sync(['results'], { since: '2024-01-01', until: '2024-03-31' }), 'results');
    h.sim.setFaults({ removeEvery: 0 });
    expect(backfill.status).toBe('incomplete');
    // The last window is one page: a removal after its only page shifts nothing past it, so it counts as read.
    expect(backfill.note).toMatch(
      /^incomplete: 2 window\(s\) may have missed results \(2024-01-01\.\.2024-02-15: the list kept changing behind the reader: \d+ pages read where it holds \d+, and the results from position \d+ of \d+ on are not proven read; 2024-02-15\.\.2024-03-31: the list kept changing behind the reader: .*\); the next run reads them again$/,
    );
    expect(await unfinished(h)).toEqual(['2024-01-01..2024-02-15', '2024-02-15..2024-03-31']);
    const run = await h.database.pool.query<{ status: string }>('select status from trainsync.runs where id = $1', [backfill.runId]);
    expect(run.rows[0]?.status).toBe('incomplete');

    // Each window's pages were read many times, yet a quarantined record counts once in the run.
    const distinct = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.quarantine where run_id = $1', [backfill.runId]);
    expect(distinct.rows[0]!.n).toBeGreaterThan(0);
    expect(backfill.quarantined).toBe(distinct.rows[0]!.n);

    // The next plain run (no --full) reads the remembered windows: every result is in.
    h.sim.setFaults({ malformedResultEvery: 0 });
    const next = summaryOf(await h.sync(['results']), 'results');
    expect(next).toMatchObject({ mode: 'incremental', status: 'succeeded' });
    expect(await unfinished(h)).toEqual([]);
    const stored = new Set((await warehouseResults(h.database.pool)).map((r) => r.id));
    expect(simulatorResults(h.sim.state).filter((r) => !stored.has(r.id))).toEqual([]);
    // Windows never mark removals; the next full walk does, and the warehouse equals the platform.
    expect(summaryOf(await h.sync(['results'], { full: true }), 'results')).toMatchObject({ status: 'succeeded' });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });

  it('a full walk the rule cannot prove marks nothing removed, ends incomplete, and the next plain run walks again', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 300 }, faults: { removeEvery: 1 } } });
    const first = summaryOf(await h.sync(['results']), 'results');
    expect(first).toMatchObject({ mode: 'full', status: 'incomplete', removed: 0 });
    expect(await unfinished(h)).toEqual(['full']);
    const sightings = await h.database.pool.query<{ n: number }>('select count(*)::int as n from trainsync.result_sightings');
    expect(sightings.rows[0]!.n).toBe(0);

    h.sim.setFaults({ removeEvery: 0 });
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
    const queued = await h.app.queue.add('sync-results', { trigger: 'schedule', since: '2024-01-01', until: '2024-01-31' }, { org: DEFAULT_ORG, dedupeId: 'sync-results' });
    await expect(runSync(scopedApp(h.app, DEFAULT_ORG), ['results'], syncPayloadSchema.parse({ trigger: 'cli', full: true }))).rejects.toThrow(SyncConflictError);
    await expect(runSync(scopedApp(h.app, DEFAULT_ORG), ['results'], syncPayloadSchema.parse({ trigger: 'cli', full: true }))).rejects.toThrow(
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
    const { rows } = await h.database.pool.query<{ started_at: Date; finished_at: Date }>('select started_at, finished_at from trainsync.runs where id = $1', [summary.runId]);
    // Each page waited 150 ms at the simulator, inside the run's one transaction: the run
    // started before the first page was asked for and finished after the last one, so its
    // times are its own, not those of its last transaction (which starts after every page).
    const pages = h.sim.requests.filter((r) => r.path === '/api/v2/courses');
    expect(pages.length).toBeGreaterThanOrEqual(1);
    expect(pages).toHaveLength(Number(summary.pages));
    // The simulator stamps arrivals on the monotonic clock; Postgres on the wall clock of the same machine.
    const wallNow = Date.now();
    const monotonicNow = performance.timeOrigin + performance.now();
    const wall = (at: number): number => wallNow - (monotonicNow - at);
    // Clock granularity (ms against µs, two clocks read a moment apart); a last-transaction time would be off by pages × 150 ms.
    const slackMs = 20;
    expect(rows[0]!.started_at.getTime()).toBeLessThanOrEqual(wall(pages[0]!.at) + slackMs);
    // The last page's answer left the simulator 150 ms after it arrived; the run finished after reading it.
    expect(rows[0]!.finished_at.getTime()).toBeGreaterThanOrEqual(wall(pages.at(-1)!.at) + 150 - slackMs);
  });

  it('a run cut off before it could be marked (its worker died, its database went away) is marked failed by the next run', async () => {
    h = await createSyncHarness({ simulator: { sizes: { courses: 10 } } });
    const { rows } = await h.database.pool.query<{ id: number }>("insert into trainsync.runs (org, resource, mode) values ('default', 'courses', 'snapshot') returning id");
    const summary = summaryOf(await h.sync(['courses']), 'courses');
    const runs = await h.database.pool.query<{ id: number; status: string; error: string | null }>("select id, status, error from trainsync.runs where resource = 'courses' order by id");
    expect(runs.rows).toEqual([
      { id: rows[0]!.id, status: 'failed', error: 'cut off before it finished (its worker stopped or lost the database); a later run took over' },
      { id: summary.runId, status: 'succeeded', error: null },
    ]);
  });
});
