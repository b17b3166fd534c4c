import { afterEach, describe, expect, it } from 'vitest';
import { allResults, queryResults, type RunningSimulator } from '../src/simulator/index.ts';
import { addDays, today } from '../src/sync/results/days.ts';
import { runCli } from './helpers/cli.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults, type ComparableResult } from './helpers/warehouse-compare.ts';

/** GET results requests the simulator logged, by query (without `page`): the pages asked for, in order. */
function resultPagesByQuery(sim: RunningSimulator): Map<string, number[]> {
  const byQuery = new Map<string, number[]>();
  for (const request of sim.requests) {
    if (request.method !== 'GET' || request.path !== '/api/v2/results') continue;
    const params = new URLSearchParams(request.query);
    const page = Number(params.get('page') ?? '1');
    params.delete('page');
    const key = params.toString();
    byQuery.set(key, [...(byQuery.get(key) ?? []), page]);
  }
  return byQuery;
}

/** The pages a query's list has now. */
function listPages(sim: RunningSimulator, key: string): number {
  const params = new URLSearchParams(key);
  const query = { startDate: params.get('startDate') ?? undefined, endDate: params.get('endDate') ?? undefined };
  return Math.max(1, Math.ceil(queryResults(sim.state, query).length / 50));
}

/** Pages asked for more than once. */
function repeated(pages: readonly number[]): number[] {
  return [...new Set(pages.filter((page, index) => pages.indexOf(page) !== index))].sort((a, b) => a - b);
}

const onDays = (since: string, until: string) => (r: ComparableResult): boolean =>
  r.dateCompleted !== null && r.dateCompleted >= `${since}T00:00:00.000Z` && r.dateCompleted < `${addDays(until, 1)}T00:00:00.000Z`;

/** Results arriving while a run pages are no gap; a result removed behind it is, and only its pages are read again. */
describe('results sync under arrivals and removals while paging', () => {
  let h: SyncHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('`sync all --since` under arrivals exits 0, equals the simulator on its days, and reads no window twice', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } },
      // One window at a time, oldest first: every arrival (dated now, so in the newest
      // windows) comes before or while its window is paged, none after the run read it.
      env: { TRAINSYNC_RESULTS_WINDOW_DAYS: '45', TRAINSYNC_RESULTS_CONCURRENCY: '1' },
    });
    // 3 new results at the newest end of the list being paged, every 3 pages.
    h.sim.setFaults({ driftEvery: 3, driftCount: 3 });
    const before = allResults(h.sim.state).length;
    const run = await runCli(['sync', 'all', '--since', '2024-01-01'], h.env);
    h.sim.setFaults({ driftEvery: 0, driftCount: 1 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/results\s*│\s*ok/);
    expect(allResults(h.sim.state).length).toBeGreaterThan(before);

    const stored = onDays('2024-01-01', today());
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state).filter(stored));

    const byQuery = resultPagesByQuery(h.sim);
    expect(byQuery.size).toBeGreaterThan(2);
    for (const [key, pages] of byQuery) {
      // Each window's pages once, plus at most a page asked for ahead at its end.
      expect(repeated(pages), key).toEqual([]);
      expect(pages.length, key).toBeLessThanOrEqual(listPages(h.sim, key) + 1);
    }
    // The two windows holding the data had pages enough for arrivals while they were paged.
    expect([...byQuery.values()].filter((pages) => pages.length >= 10)).toHaveLength(2);
  });

  it('`sync results --full` under arrivals ends ok, equals the simulator, re-reads only what was in flight, and counts its requests', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 1_200 } } });
    let requests = 0;
    for (const label of ['first load', 'full walk']) {
      h.sim.setFaults({ driftEvery: 3, driftCount: 3 });
      const requestsBefore = h.sim.requests.length;
      const summary = summaryOf(await h.sync(['results'], { full: true }), 'results');
      h.sim.setFaults({ driftEvery: 0, driftCount: 1 });
      expect(summary, label).toMatchObject({ mode: 'full', status: 'succeeded', removed: 0 });
      expect(summary.note, label).toBeUndefined();
      expect(await warehouseResults(h.database.pool), label).toEqual(simulatorResults(h.sim.state));

      const pages = h.sim.requests.slice(requestsBefore).filter((r) => r.path === '/api/v2/results').map((r) => Number(new URLSearchParams(r.query).get('page')));
      // Pages read ahead while the list grew cannot be placed (they may have been served in
      // any order): those in flight at the first change are read again, one at a time, and
      // from there the walk reads one page at a time, where arrivals cost nothing.
      expect(repeated(pages).length, label).toBeGreaterThan(0);
      // At most the pages in flight (4 + 2) and those answered but not yet placed.
      expect(repeated(pages).length, label).toBeLessThanOrEqual(2 * 6);
      expect(pages.length, label).toBeLessThanOrEqual(listPages(h.sim, '') + 2 * 6);
      // Requests per run: every request this run sent, as the simulator saw them.
      expect(summary.requests, label).toBe(h.sim.requests.length - requestsBefore);
      requests += Number(summary.requests);
    }
    // /metrics: requests per run, one observation per run.
    const metrics = await h.app.metrics.registry.getSingleMetricAsString('trainsync_run_requests');
    expect(metrics).toContain('trainsync_run_requests_count{org="default",resource="results"} 2');
    expect(metrics).toContain(`trainsync_run_requests_sum{org="default",resource="results"} ${requests}`);
    const status = await runCli(['status', '--json'], h.env);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { runs: Array<{ resource: string; requests: number; pages: number }> };
    const results = report.runs.find((r) => r.resource === 'results');
    expect(results?.requests).toBeGreaterThanOrEqual(results!.pages);
  });

  it('a result removed behind a window while it pages: the page before is read again and no result is missed', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 600, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } },
      env: { TRAINSYNC_RESULTS_WINDOW_DAYS: '100', TRAINSYNC_RESULTS_CONCURRENCY: '1' },
    });
    const dated = (r: ComparableResult): boolean => r.dateCompleted !== null;
    const before = new Set(simulatorResults(h.sim.state).filter(dated).map((r) => r.id));
    h.sim.setFaults({ removeEvery: 4, removeLimit: 1 });
    const summary = summaryOf(await h.sync(['results'], { since: '2024-01-01', until: '2024-03-31' }), 'results');
    h.sim.setFaults({ removeEvery: 0, removeLimit: 0 });
    expect(summary).toMatchObject({ mode: 'backfill', status: 'succeeded' });

    const now = simulatorResults(h.sim.state).filter(dated);
    const removed = [...before].filter((id) => !now.some((r) => r.id === id));
    expect(removed).toHaveLength(1);
    // The first read skipped the result that moved back onto page 4; the second read has it.
    const stored = await warehouseResults(h.database.pool);
    const storedIds = new Set(stored.map((r) => r.id));
    expect(now.filter((r) => !storedIds.has(r.id))).toEqual([]);
    // Windows never mark removals (a full walk does): the removed one is the only extra row.
    expect(stored.filter((r) => !now.some((n) => n.id === r.id)).map((r) => r.id)).toEqual(removed);

    const byQuery = resultPagesByQuery(h.sim);
    const [dataWindow] = [...byQuery.entries()].filter(([, pages]) => pages.length > 2);
    expect(dataWindow).toBeDefined();
    const [key, pages] = dataWindow!;
    // The removal showed as a fall of the total on the next page: the reader went back one
    // page, once, and the page that showed the fall (of the same list) needed no second read.
    expect(repeated(pages)).toHaveLength(1);
    expect(pages.filter((page) => page === 1)).toHaveLength(1);
    expect(pages.length).toBe(listPages(h.sim, key) + 1);
  });

  it('a result removed behind the full walk: the reader goes back one page, and the next walk marks it removed', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 1_000 } }, env: { TRAINSYNC_RESULTS_CONCURRENCY: '1' } });
    const before = new Set(simulatorResults(h.sim.state).map((r) => r.id));
    h.sim.setFaults({ removeEvery: 8, removeLimit: 1 });
    const summary = summaryOf(await h.sync(['results'], { full: true }), 'results');
    h.sim.setFaults({ removeEvery: 0, removeLimit: 0 });
    expect(summary).toMatchObject({ mode: 'full', status: 'succeeded' });

    const now = simulatorResults(h.sim.state);
    expect(before.size - now.length).toBe(1);
    const storedIds = new Set((await warehouseResults(h.database.pool)).map((r) => r.id));
    expect(now.filter((r) => !storedIds.has(r.id))).toEqual([]);

    const pages = resultPagesByQuery(h.sim).get('') ?? [];
    const again = repeated(pages);
    // The page the moved result now sits on, and the one that showed the fall: not the whole list.
    expect(again.length).toBeGreaterThan(0);
    expect(again.length).toBeLessThanOrEqual(2);
    expect(again.every((page) => page >= 7 && page <= 10)).toBe(true);
    expect(pages.length).toBeLessThanOrEqual(listPages(h.sim, '') + 2 + 2);

    // It was read before it went, so this walk could not know; the next one marks it.
    const next = summaryOf(await h.sync(['results'], { full: true }), 'results');
    expect(next).toMatchObject({ status: 'succeeded', removed: 1 });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });
});
