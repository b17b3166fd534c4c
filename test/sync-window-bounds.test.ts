import { owner } from './helpers/owner.ts';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/simulator/index.ts';
import { getWatermark } from '../src/sync/sync-state.ts';
import { boundsKey } from '../src/sync/results/windows.ts';
import { results } from '../src/sync/resources/results.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults, type ComparableResult } from './helpers/warehouse-compare.ts';

/** The startDate values of every GET results request, in order. */
function startDates(sim: RunningSimulator): string[] {
  return sim.requests.filter((r) => r.method === 'GET' && r.path === '/api/v2/results').map((r) => new URLSearchParams(r.query).get('startDate') ?? '');
}

const inMarch = (r: ComparableResult): boolean => r.dateCompleted !== null && r.dateCompleted >= '2024-03-01T00:00:00.000Z' && r.dateCompleted < '2024-04-01T00:00:00.000Z';

/** Windows ask for date-times, and fall back to whole days once where the platform refuses them. */
describe('result windows: date-time bounds, and whole days where the platform takes only dates', () => {
  let h: SyncHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('asks for exactly its days as date-times where the platform takes them', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 800, resultsFrom: '2024-01-01', resultsTo: '2024-06-30' } } });
    const summary = summaryOf(await h.sync(['results'], { since: '2024-03-01', until: '2024-03-31' }), 'results');
    expect(summary).toMatchObject({ mode: 'backfill', status: 'succeeded' });
    const asked = startDates(h.sim).filter((d) => d !== '');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((d) => /T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(d))).toBe(true);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state).filter(inMarch));
    expect(await getWatermark(owner(h.app).scope('default'), boundsKey(results.name))).toBeUndefined();
  });

  it('a platform that refuses date-times: one 400, then whole days, remembered for the next run', async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 800, resultsFrom: '2024-01-01', resultsTo: '2024-06-30' }, dateBounds: 'date-only' } });
    const summary = summaryOf(await h.sync(['results'], { since: '2024-03-01', until: '2024-03-31' }), 'results');
    expect(summary).toMatchObject({ mode: 'backfill', status: 'succeeded' });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state).filter(inMarch));
    const refused = h.sim.requests.filter((r) => r.path === '/api/v2/results' && r.status === 400);
    expect(refused.length).toBeGreaterThan(0);
    // Windows read together may each have sent one date-time before the first 400 came back.
    expect(refused.length).toBeLessThanOrEqual(h.config.TRAINSYNC_RESULTS_CONCURRENCY);
    expect(await getWatermark(owner(h.app).scope('default'), boundsKey(results.name))).toBe('day');
    expect(h.logLines.join('')).toContain('refused date-time bounds');

    h.sim.resetRequests();
    const again = summaryOf(await h.sync(['results'], { since: '2024-03-01', until: '2024-03-31' }), 'results');
    expect(again).toMatchObject({ status: 'succeeded' });
    const asked = startDates(h.sim).filter((d) => d !== '');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((d) => /^\d{4}-\d{2}-\d{2}$/.test(d))).toBe(true);
  });
});
