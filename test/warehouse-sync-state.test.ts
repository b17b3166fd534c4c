import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RecordProblem } from '../src/platform/types.ts';
import { addRunCounts, finishRun, lastRuns, startRun } from '../src/sync/runs-store.ts';
import { deleteCheckpoints, getCheckpoint, getWatermark, listCheckpoints, quarantineCounts, quarantineRecords, saveCheckpoint, setWatermark } from '../src/sync/sync-state.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});

afterAll(async () => {
  await t.drop();
});

describe('runs', () => {
  it('records a run from start to finish and reports the latest run per resource', async () => {
    const first = await startRun(t.scope(), { resource: 'courses', mode: 'full', params: { full: true }, jobId: 'sync-courses:1' });
    await finishRun(t.db, first, { status: 'failed', error: 'platform said 500' });
    const second = await t.scope().transaction((cdb) => startRun(cdb, { resource: 'courses', mode: 'full' }));
    expect(second).toBeGreaterThan(first);
    await addRunCounts(t.db, second, { pages: 2, inserted: 5 });
    await addRunCounts(t.db, second, { pages: 1, unchanged: 7 });
    await finishRun(t.db, second, { status: 'succeeded', removed: 1 });
    const seats = await startRun(t.scope(), { resource: 'seats' });
    await finishRun(t.db, seats, { status: 'succeeded', note: 'not applicable' });

    const runs = await lastRuns(t.scope());
    expect(runs.map((r) => [r.resource, r.id, r.status])).toEqual([
      ['courses', second, 'succeeded'],
      ['seats', seats, 'succeeded'],
    ]);
    expect(runs[0]).toMatchObject({ pages: 3, inserted: 5, unchanged: 7, removed: 1, updated: 0, mode: 'full', error: null });
    expect(runs[0]!.finishedAt).toBeInstanceOf(Date);
    expect(runs[1]!.note).toBe('not applicable');
    const failed = await t.db.selectFrom('trainsync.runs').select(['error', 'params', 'job_id']).where('id', '=', first).executeTakeFirstOrThrow();
    expect(failed).toEqual({ error: 'platform said 500', params: { full: true }, job_id: 'sync-courses:1' });
  });
});

describe('checkpoints and watermarks', () => {
  it('saves, replaces, lists, parses and deletes checkpoints by literal prefix', async () => {
    const runId = await startRun(t.scope(), { resource: 'results' });
    await saveCheckpoint(t.scope(), 'results:job:1:window:2024-01-01..2024-01-08', { page: 1 }, runId);
    await saveCheckpoint(t.scope(), 'results:job:1:window:2024-01-01..2024-01-08', { page: 4 }, runId);
    await saveCheckpoint(t.scope(), 'results:job:1:window:2024-01-08..2024-01-15', { page: 2 }, runId);
    await saveCheckpoint(t.scope(), 'results:job:1_other', { page: 9 }, runId);
    await saveCheckpoint(t.scope(), 'results:job:10:run', { runId }, runId);

    expect(await getCheckpoint(t.scope(), 'results:job:1:window:2024-01-01..2024-01-08', z.object({ page: z.number() }))).toEqual({ page: 4 });
    await expect(getCheckpoint(t.scope(), 'results:job:1:window:2024-01-01..2024-01-08', z.object({ page: z.string() }))).rejects.toThrow();
    expect(await getCheckpoint(t.scope(), 'nope', z.unknown())).toBeUndefined();
    expect(await listCheckpoints(t.scope(), 'results:job:1:')).toEqual([
      'results:job:1:window:2024-01-01..2024-01-08',
      'results:job:1:window:2024-01-08..2024-01-15',
    ]);
    // "_" and "%" are not wildcards.
    expect(await listCheckpoints(t.scope(), 'results:job:_')).toEqual([]);
    expect(await deleteCheckpoints(t.scope(), 'results:job:1:')).toBe(2);
    expect(await listCheckpoints(t.scope(), 'results:job:1')).toEqual(['results:job:10:run', 'results:job:1_other']);
  });

  it('sets and replaces watermarks', async () => {
    expect(await getWatermark(t.scope(), 'results')).toBeUndefined();
    await setWatermark(t.scope(), 'results', '2024-01-31');
    await setWatermark(t.scope(), 'results', '2024-02-29');
    expect(await getWatermark(t.scope(), 'results')).toBe('2024-02-29');
  });
});

describe('quarantine', () => {
  it('stores each raw record once per resource, refreshing it when seen again', async () => {
    const run1 = await startRun(t.scope(), { resource: 'results' });
    const bad = (raw: unknown, message = 'id: not a GUID', resource = 'results'): RecordProblem => ({ resource, index: 0, page: 1, raw, message });
    const problems = [bad({ id: 'x', score: 1 }), bad({ score: 1, id: 'x' }), bad({ id: 'y' }), bad({ id: 'x', score: 1 }, 'name', 'courses')];
    // Key order does not matter (jsonb), so the first two are one record.
    expect(await quarantineRecords(t.scope(), run1, problems)).toBe(3);

    const run2 = await startRun(t.scope(), { resource: 'results' });
    expect(await t.scope().transaction((cdb) => quarantineRecords(cdb, run2, [bad({ id: 'x', score: 1 }, 'id: still not a GUID')]))).toBe(1);
    const { rows } = await t.pool.query(
      `select run_id, message, times_seen from trainsync.quarantine where resource = 'results' order by raw->>'id'`,
    );
    expect(rows).toEqual([
      { run_id: run2, message: 'id: still not a GUID', times_seen: 2 },
      { run_id: run1, message: 'id: not a GUID', times_seen: 1 },
    ]);
    expect(await quarantineRecords(t.scope(), run2, [])).toBe(0);
    const counts = await quarantineCounts(t.scope());
    expect(counts.map((c) => [c.resource, c.count])).toEqual([
      ['courses', 1],
      ['results', 2],
    ]);
  });
});
