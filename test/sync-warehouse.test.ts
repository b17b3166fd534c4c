import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCourse, removeCourse, removeResult, updateCourse, updateResult } from '../src/simulator/index.ts';
import { createSyncHarness, summaryOf, type SyncHarness } from './helpers/sync-harness.ts';
import {
  simulatorCourses,
  simulatorFilters,
  simulatorResults,
  simulatorUsers,
  warehouseCourses,
  warehouseFilters,
  warehouseResults,
  warehouseUsers,
} from './helpers/warehouse-compare.ts';

describe('sync: the warehouse equals the platform', () => {
  let h: SyncHarness;

  beforeAll(async () => {
    h = await createSyncHarness({ simulator: { sizes: { results: 1_200, users: 150, courses: 30 } } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a first sync of everything equals the simulator field by field', async () => {
    const utcDay = (): string => new Date().toISOString().slice(0, 10);
    const dayBefore = utcDay();
    const outcomes = await h.sync(['courses', 'filters', 'users', 'results', 'seats']);
    const dayAfter = utcDay();
    expect(outcomes.map((o) => [o.name, o.status, o.error])).toEqual(outcomes.map((o) => [o.name, 'completed', undefined]));

    const pool = h.database.pool;
    expect(await warehouseResults(pool)).toEqual(simulatorResults(h.sim.state));
    expect(await warehouseCourses(pool)).toEqual(simulatorCourses(h.sim.state));
    expect(await warehouseFilters(pool)).toEqual(simulatorFilters(h.sim.state));
    expect(await warehouseUsers(pool)).toEqual(simulatorUsers(h.sim.state));

    const results = summaryOf(outcomes, 'results');
    expect(results.mode).toBe('full');
    expect(results.inserted).toBe(simulatorResults(h.sim.state).length);

    const seats = await pool.query('select seats_in_use, total_seats, applicable from training.seat_usage');
    expect(seats.rows).toEqual([
      { seats_in_use: h.sim.state.users.filter((u) => u.hasAccess).length, total_seats: h.sim.state.seats.totalSeats, applicable: true },
    ]);
    const watermark = await pool.query('select value from trainsync.watermarks where resource = $1', ['results']);
    // The run's own day: the day it started, or the next one when it ran across midnight (UTC).
    expect([dayBefore, dayAfter]).toContain(watermark.rows[0]?.value);
  });

  it('a second run changes nothing: 0 inserted, 0 updated', async () => {
    const outcomes = await h.sync(['courses', 'filters', 'users']);
    for (const resource of ['courses', 'filters', 'users']) {
      const summary = summaryOf(outcomes, resource);
      expect({ resource, inserted: summary.inserted, updated: summary.updated, removed: summary.removed }).toEqual({ resource, inserted: 0, updated: 0, removed: 0 });
      expect(summary.unchanged).toBeGreaterThan(0);
    }
    const full = summaryOf(await h.sync(['results'], { full: true }), 'results');
    expect(full).toMatchObject({ inserted: 0, updated: 0, removed: 0, unchanged: simulatorResults(h.sim.state).length });
  });

  it('updates a changed score and marks a removed course without deleting it', async () => {
    const [target] = h.sim.state.results;
    updateResult(h.sim.state, target!.id, { score: (target!.score ?? 0) + 1 });
    const [gone, renamed] = h.sim.state.courses;
    removeCourse(h.sim.state, gone!.id);
    updateCourse(h.sim.state, renamed!.id, { name: `${renamed!.name} (2nd edition)` });

    const outcomes = await h.sync(['courses']);
    expect(summaryOf(outcomes, 'courses')).toMatchObject({ inserted: 0, updated: 1, removed: 1 });
    const full = summaryOf(await h.sync(['results'], { full: true }), 'results');
    expect(full).toMatchObject({ inserted: 0, updated: 1, removed: 0 });

    const pool = h.database.pool;
    const removed = await pool.query('select removed_at from training.courses where course_id = $1', [gone!.id.toLowerCase()]);
    expect(removed.rows).toHaveLength(1);
    expect(removed.rows[0]?.removed_at).toBeInstanceOf(Date);
    expect(await warehouseCourses(pool)).toEqual(simulatorCourses(h.sim.state));
    expect(await warehouseResults(pool)).toEqual(simulatorResults(h.sim.state));

    // It comes back: removed_at is cleared.
    addCourse(h.sim.state, { ...gone! });
    expect(summaryOf(await h.sync(['courses']), 'courses')).toMatchObject({ updated: 1, removed: 0 });
    const back = await pool.query('select removed_at from training.courses where course_id = $1', [gone!.id.toLowerCase()]);
    expect(back.rows[0]?.removed_at).toBeNull();
  });

  it('a full run marks results the platform no longer returns as removed', async () => {
    const victim = h.sim.state.results[5]!;
    removeResult(h.sim.state, victim.id);
    const full = summaryOf(await h.sync(['results'], { full: true }), 'results');
    expect(full).toMatchObject({ removed: 1, inserted: 0, updated: 0 });
    const row = await h.database.pool.query('select removed_at from training.results where result_id = $1', [victim.id.toLowerCase()]);
    expect(row.rows[0]?.removed_at).toBeInstanceOf(Date);
    expect(await warehouseResults(h.database.pool)).toEqual(simulatorResults(h.sim.state));
  });

  it('a backfill reads date windows, checkpoints each, and leaves the watermark alone', async () => {
    const before = await h.database.pool.query('select value from trainsync.watermarks where resource = $1', ['results']);
    const [target] = h.sim.state.results.filter((r) => r.dateCompleted?.startsWith('2024-03'));
    updateResult(h.sim.state, target!.id, { score: 1 });
    h.sim.resetRequests();
    const summary = summaryOf(await h.sync(['results'], { since: '2024-03-01', until: '2024-03-31' }), 'results');
    expect(summary).toMatchObject({ mode: 'backfill', updated: 1, inserted: 0 });
    // Windows of 7 days over March: 5 windows, each asked with a day of overlap either side.
    const asked = h.sim.requests.filter((r) => r.path === '/api/v2/results').map((r) => new URLSearchParams(r.query).get('startDate'));
    // Each window's exact days, as date-times: a millisecond before its first midnight.
    expect(new Set(asked)).toEqual(new Set(['2024-02-29T23:59:59.999Z', '2024-03-07T23:59:59.999Z', '2024-03-14T23:59:59.999Z', '2024-03-21T23:59:59.999Z', '2024-03-28T23:59:59.999Z']));
    const after = await h.database.pool.query('select value from trainsync.watermarks where resource = $1', ['results']);
    expect(after.rows).toEqual(before.rows);
    const left = await h.database.pool.query('select count(*)::int as n from trainsync.checkpoints');
    expect(left.rows[0]?.n).toBe(0);
  });
});
