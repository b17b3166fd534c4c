import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addResult, allResults, updateResult } from '../src/simulator/index.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorResults, warehouseResults } from './helpers/warehouse-compare.ts';

/**
 * The incremental lookback window, with results dated relative to today (the other
 * tests' data is from 2024, so "today minus the lookback" holds nothing there): after a
 * first full walk, a plain run reads the last TRAINSYNC_RESULTS_LOOKBACK days up to
 * today, so what changed inside them arrives and what changed before them does not.
 */

const DAY_MS = 86_400_000;
/** The UTC day `offset` days from now, as YYYY-MM-DD. */
const day = (offset: number): string => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);

describe('incremental results sync: the lookback window', () => {
  let h: SyncHarness;

  beforeAll(async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 600, users: 40, courses: 10, resultsFrom: day(-60), resultsTo: day(-1) } },
      env: { TRAINSYNC_RESULTS_LOOKBACK: 'P1W', TRAINSYNC_RESULTS_WINDOW_DAYS: '3' },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  const scoreInWarehouse = async (resultId: string): Promise<number | null> =>
    (await h.database.pool.query<{ score: number | null }>('select score from training.results where result_id = $1', [resultId.toLowerCase()])).rows[0]?.score ?? null;

  it('reads what changed in the last seven days, and not what changed before them', async () => {
    expect(summaryOf(await h.sync(['results']), 'results')).toMatchObject({ mode: 'full', status: 'succeeded' });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));

    // Dated 2 to 4 days ago (inside the lookback, whatever the hour), and 20 to 40 days ago (far before it).
    const dated = allResults(h.sim.state).filter((r) => r.dateCompleted !== null);
    const within = (from: number, to: number) => (r: { dateCompleted: string | null }): boolean => r.dateCompleted! >= `${day(from)}T00:00:00` && r.dateCompleted! < `${day(to)}T00:00:00`;
    const recent = dated.find(within(-4, -2));
    const old = dated.find(within(-40, -20));
    expect(recent, 'a result dated 2 to 4 days ago').toBeDefined();
    expect(old, 'a result dated 20 to 40 days ago').toBeDefined();
    const oldScore = await scoreInWarehouse(old!.id);
    updateResult(h.sim.state, recent!.id, { score: (recent!.score ?? 0) + 7 });
    updateResult(h.sim.state, old!.id, { score: (old!.score ?? 0) + 7 });
    const added = addResult(h.sim.state, { dateCompleted: `${day(-1)}T09:30:00.000Z` });

    h.sim.resetRequests();
    const incremental = summaryOf(await h.sync(['results']), 'results');
    expect(incremental).toMatchObject({ mode: 'incremental', status: 'succeeded', inserted: 1, updated: 1 });
    // Seven days and today, in windows of three days: three or four windows (four when the run crosses midnight).
    expect(Number(incremental.windows)).toBeGreaterThanOrEqual(3);
    expect(Number(incremental.windows)).toBeLessThanOrEqual(4);

    // Read: the new result and the change inside the lookback.
    expect(await scoreInWarehouse(added.id)).toBe(added.score);
    expect(await scoreInWarehouse(recent!.id)).toBe((recent!.score ?? 0) + 7);
    // Not read: the change from before the lookback (a --full or --since run picks it up).
    expect(await scoreInWarehouse(old!.id)).toBe(oldScore);
    // Every request asked for dates inside the lookback (with a day's margin on each side).
    const asked = h.sim.requests.filter((r) => r.path === '/api/v2/results').map((r) => new URLSearchParams(r.query).get('startDate') ?? '');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((start) => start.slice(0, 10) >= day(-9)), asked.join(', ')).toBe(true);

    // And a --full run then converges on everything.
    expect(summaryOf(await h.sync(['results'], { full: true }), 'results')).toMatchObject({ mode: 'full', updated: 1, inserted: 0 });
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });
});
