import { afterEach, describe, expect, it } from 'vitest';
import { allResults } from '../src/simulator/index.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import { simulatorCourses, simulatorResults, warehouseCourses, warehouseResults } from './helpers/warehouse-compare.ts';

describe('sync under faults', () => {
  let h: SyncHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('with 429s, 5xx, malformed records, foreign-host links and drift, the warehouse equals the platform minus the quarantined records', async () => {
    h = await createSyncHarness({
      simulator: {
        sizes: { results: 900, courses: 20, users: 60 },
        faults: { rateLimitEvery: 9, retryAfter: '1', serverErrorEvery: 7, malformedResultEvery: 60, foreignNextLink: true, driftEvery: 6 },
      },
    });
    const outcomes = await h.sync(['courses', 'results']);
    expect(outcomes.map((o) => o.status)).toEqual(['completed', 'completed']);
    const results = summaryOf(outcomes, 'results');

    // Drift added results while the walk ran; stop it and read once more, as the next run would.
    h.sim.setFaults({ driftEvery: 0 });
    const again = summaryOf(await h.sync(['results'], { full: true }), 'results');

    const statuses = h.sim.requests.map((r) => r.status);
    expect(statuses).toContain(429);
    expect(statuses.some((s) => s >= 500)).toBe(true);
    // Every request went to the simulator's own origin with the key; none was redirected.
    expect(h.sim.requests.every((r) => r.authorized)).toBe(true);

    const quarantine = await h.database.pool.query<{ raw: { id?: unknown; score?: unknown } }>("select raw from trainsync.quarantine where resource = 'results'");
    expect(quarantine.rows.length).toBeGreaterThan(0);
    expect(Number(results.quarantined) + Number(again.quarantined)).toBeGreaterThanOrEqual(quarantine.rows.length);

    // Each warehouse row equals its simulator row; the only ones missing are the quarantined.
    const stored = await warehouseResults(h.database.pool);
    const expected = new Map(simulatorResults(h.sim.state).map((r) => [r.id, r]));
    for (const row of stored) expect(row).toEqual(expected.get(row.id));
    expect(stored.length).toBe(allResults(h.sim.state).length - quarantine.rows.length);
    expect(await warehouseCourses(h.database.pool)).toEqual(simulatorCourses(h.sim.state));

    // The foreign-host link was noticed and logged, never followed.
    expect(h.logLines.join('')).toMatch(/foreign/i);
  });

  it('a result added while a window is paged is not lost, and no result that existed is skipped', async () => {
    h = await createSyncHarness({
      simulator: { sizes: { results: 1_500, resultsFrom: '2024-01-01', resultsTo: '2024-03-31' } },
      env: { TRAINSYNC_RESULTS_CONCURRENCY: '1', TRAINSYNC_RESULTS_WINDOW_DAYS: '45' },
    });
    const before = new Set(allResults(h.sim.state).filter((r) => r.dateCompleted !== null).map((r) => r.id.toLowerCase()));
    h.sim.setFaults({ driftEvery: 4 });
    const summary = summaryOf(await h.sync(['results'], { since: '2024-01-01', until: '2024-04-30' }), 'results');
    h.sim.setFaults({ driftEvery: 0 });
    // Arrivals are no gap: nothing is read twice for them.
    expect(summary.status).toBe('succeeded');

    const stored = new Set((await warehouseResults(h.database.pool)).map((r) => r.id));
    const skipped = [...before].filter((id) => !stored.has(id));
    expect(skipped).toEqual([]);
    const added = allResults(h.sim.state).filter((r) => r.dateCompleted !== null && !before.has(r.id.toLowerCase()));
    expect(added.length).toBeGreaterThan(0);
    // Results that arrived while the windows were paged were read too.
    expect(added.filter((r) => !stored.has(r.id.toLowerCase()))).toEqual([]);
    const dated = simulatorResults(h.sim.state).filter((r) => r.dateCompleted !== null);
    expect(await warehouseResults(h.database.pool)).toEqual(dated);
  });
});
