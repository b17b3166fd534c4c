import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resultSchema, type Result } from '../src/platform/schemas.ts';
import { markUnseenResultsRemoved, recordSightings, upsertResults } from './helpers/resource-loaders.ts';
import { getCheckpoint, saveCheckpoint } from '../src/sync/sync-state.ts';
import { startRun } from '../src/sync/runs-store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});

afterAll(async () => {
  await t.drop();
});

beforeEach(async () => {
  await t.pool.query('truncate training.results, training.result_filter_answers, trainsync.result_sightings, trainsync.checkpoints');
});

const COURSE = randomUUID();

/** A result as the platform sends it, parsed by the real schema (normalisation included). */
function result(overrides: Record<string, unknown> = {}): Result {
  return resultSchema.parse({
    id: randomUUID(),
    userId: randomUUID(),
    courseId: COURSE,
    multiCourseResultId: null,
    isComplete: true,
    dateCompleted: '2024-05-01T09:30:00.123Z',
    score: 8,
    maximumScore: 10,
    passRate: 70,
    courseType: 'SINGLE_COURSE',
    resultFilters: [],
    ...overrides,
  });
}

function load(results: Result[], seenAt = new Date()): ReturnType<typeof upsertResults> {
  return t.scope().transaction((client) => upsertResults(client, results, { seenAt }));
}

async function answersOf(resultId: string): Promise<string[]> {
  const { rows } = await t.pool.query<{ answer_id: string }>(
    'select answer_id from training.result_filter_answers where result_id = $1 order by answer_id',
    [resultId],
  );
  return rows.map((r) => r.answer_id);
}

describe('upsertResults', () => {
  const loadFresh = (results: Result[]): ReturnType<typeof upsertResults> =>
    t.scope().transaction((client) => upsertResults(client, results, { seenAt: new Date(), fresh: true }));

  it('fresh (a first load): new rows by plain inserts; an id already stored or repeated falls back to the upsert, with the same outcome', async () => {
    const a = result({ resultFilters: [randomUUID(), randomUUID()] });
    const b = result();
    expect(await loadFresh([a, b])).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await answersOf(a.id)).toEqual([...a.resultFilters].sort());

    // `a` exists (changed answers), `b` exists unchanged, `c` is new and listed twice (the later wins).
    const changedA = { ...a, resultFilters: [a.resultFilters[0]!] };
    const c = result({ score: 1 });
    const cAgain = { ...c, score: 2, resultFilters: [randomUUID()] };
    expect(await loadFresh([changedA, b, c, cAgain])).toEqual({ inserted: 1, updated: 1, unchanged: 1 });
    expect(await answersOf(a.id)).toEqual([a.resultFilters[0]]);
    expect(await answersOf(c.id)).toEqual(cAgain.resultFilters);
    const scores = await t.pool.query<{ score: number }>('select score from training.results where result_id = $1', [c.id]);
    expect(scores.rows).toEqual([{ score: 2 }]);
    const count = await t.pool.query<{ n: number }>('select count(*)::int as n from training.results');
    expect(count.rows[0]!.n).toBe(3);
  });

  it('counts inserted, then unchanged, then updated rows; unchanged rows are not rewritten', async () => {
    const batch = [result(), result(), result()];
    expect(await load(batch)).toEqual({ inserted: 3, updated: 0, unchanged: 0 });

    const before = await t.pool.query('select result_id, xmin::text as xmin from training.results order by result_id');
    expect(await load(batch)).toEqual({ inserted: 0, updated: 0, unchanged: 3 });
    const after = await t.pool.query('select result_id, xmin::text as xmin from training.results order by result_id');
    expect(after.rows).toEqual(before.rows);

    const changed = resultSchema.parse({ ...batch[1], score: 3 });
    expect(await load([batch[0]!, changed, batch[2]!])).toEqual({ inserted: 0, updated: 1, unchanged: 2 });
    const { rows } = await t.pool.query('select score from training.results where result_id = $1', [changed.id]);
    expect(rows[0].score).toBe(3);
  });

  it('writes an id listed twice in one batch once, keeping the last', async () => {
    const first = result({ score: 1 });
    const again = resultSchema.parse({ ...first, score: 9 });
    const other = result();
    expect(await load([first, other, again])).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    const { rows } = await t.pool.query('select score from training.results where result_id = $1', [first.id]);
    expect(rows).toEqual([{ score: 9 }]);
  });

  it("replaces a result's filter answers; an answers-only change counts as updated", async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()].sort();
    const r = result({ resultFilters: [a, b] });
    const untouched = result({ resultFilters: [c] });
    const t0 = new Date('2024-06-01T00:00:00Z');
    expect(await load([r, untouched], t0)).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await answersOf(r.id)).toEqual([a, b]);

    const t1 = new Date('2024-06-02T00:00:00Z');
    const counts = await load([resultSchema.parse({ ...r, resultFilters: [b!.toUpperCase(), c] }), untouched], t1);
    expect(counts).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
    expect(await answersOf(r.id)).toEqual([b, c]);
    expect(await answersOf(untouched.id)).toEqual([c]);
    const { rows } = await t.pool.query<{ updated_at: Date }>('select updated_at from training.results where result_id = $1', [r.id]);
    expect(rows[0]!.updated_at.toISOString()).toBe(t1.toISOString());

    expect(await load([resultSchema.parse({ ...r, resultFilters: [] })])).toEqual({ inserted: 0, updated: 1, unchanged: 0 });
    expect(await answersOf(r.id)).toEqual([]);
  });

  it('stores seven-digit fractions and offsets as the right instant', async () => {
    const withOffset = result({ dateCompleted: '2024-03-05T10:11:12.1234567+02:00' });
    const noOffset = result({ dateCompleted: '2024-03-05T10:11:12.5' });
    const none = result({ dateCompleted: null, isComplete: false });
    await load([withOffset, noOffset, none]);
    const { rows } = await t.pool.query<{ result_id: string; utc: string | null }>(
      `select result_id, to_char(date_completed at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as utc
       from training.results`,
    );
    const byId = new Map(rows.map((r) => [r.result_id, r.utc]));
    expect(byId.get(withOffset.id)).toBe('2024-03-05T08:11:12.123456');
    expect(byId.get(noOffset.id)).toBe('2024-03-05T10:11:12.500000');
    expect(byId.get(none.id)).toBeNull();
    // The same instant written differently is not a change.
    const sameInstant = resultSchema.parse({ ...withOffset, dateCompleted: '2024-03-05T08:11:12.123456Z' });
    expect(await load([sameInstant])).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
  });

  it('keeps unknown fields in extra (null when none), and a change to them is an update', async () => {
    const plain = result();
    const extended = result({ certificateUrl: 'https://x.example/c\t1', attempts: { count: 2, last: null } });
    await load([plain, extended]);
    const { rows } = await t.pool.query('select result_id, extra from training.results');
    const byId = new Map(rows.map((r) => [r.result_id, r.extra]));
    expect(byId.get(plain.id)).toBeNull();
    expect(byId.get(extended.id)).toEqual({ certificateUrl: 'https://x.example/c\t1', attempts: { count: 2, last: null } });
    const changed = resultSchema.parse({ ...extended, attempts: { count: 3, last: null } });
    expect(await load([plain, changed])).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
  });

  it('carries tabs, newlines, backslashes and quotes through COPY, and drops NUL which Postgres cannot store', async () => {
    const odd = result({ courseType: 'A\tB\nC\\D"E\u0000F', note: 'x\u0000y\\z' });
    expect(await load([odd])).toEqual({ inserted: 1, updated: 0, unchanged: 0 });
    const { rows } = await t.pool.query('select course_type, extra from training.results where result_id = $1', [odd.id]);
    expect(rows[0]).toEqual({ course_type: 'A\tB\nC\\D"EF', extra: { note: 'xy\\z' } });
  });

  it('marks results a full run did not see as removed, and clears the mark when one is listed again', async () => {
    const [kept, gone, unparsable] = [result(), result(), result()];
    await load([kept, gone, unparsable]);
    const runId = await startRun(t.scope(), { resource: 'results', mode: 'full' });
    const removed = await t.scope().transaction(async (client) => {
      expect(await upsertResults(client, [kept], { seenAt: new Date(), runId, trackSightings: true })).toEqual({
        inserted: 0,
        updated: 0,
        unchanged: 1,
      });
      await recordSightings(client, runId, [unparsable.id]);
      return markUnseenResultsRemoved(client, runId);
    });
    expect(removed).toBe(1);
    const { rows } = await t.pool.query('select result_id from training.results where removed_at is not null');
    expect(rows.map((r) => r.result_id)).toEqual([gone.id]);
    const details = await t.db.selectFrom('training.result_details').select('result_id').execute();
    expect(details.map((d) => d.result_id).sort()).toEqual([kept.id, unparsable.id].sort());
    const sightings = await t.pool.query('select count(*)::int as n from trainsync.result_sightings');
    expect(sightings.rows[0].n).toBe(0);

    expect(await load([gone, kept])).toEqual({ inserted: 0, updated: 1, unchanged: 1 });
    const back = await t.pool.query('select removed_at from training.results where result_id = $1', [gone.id]);
    expect(back.rows[0].removed_at).toBeNull();
  });

  it('commits rows and their checkpoint together, or neither', async () => {
    const r = result();
    await expect(
      t.scope().transaction(async (tx) => {
        await upsertResults(tx, [r], { seenAt: new Date() });
        await saveCheckpoint(tx, 'results:window:2024-05-01..2024-05-08', { page: 3 }, null);
        throw new Error('crash after the checkpoint');
      }),
    ).rejects.toThrow('crash after the checkpoint');
    const rows = await t.pool.query('select count(*)::int as n from training.results');
    expect(rows.rows[0].n).toBe(0);
    expect(await getCheckpoint(t.scope(), 'results:window:2024-05-01..2024-05-08', z.unknown())).toBeUndefined();

    await t.scope().transaction(async (tx) => {
      await upsertResults(tx, [r], { seenAt: new Date() });
      await saveCheckpoint(tx, 'results:window:2024-05-01..2024-05-08', { page: 3 }, null);
    });
    expect(await getCheckpoint(t.scope(), 'results:window:2024-05-01..2024-05-08', z.unknown())).toEqual({ page: 3 });
  });

  it('loads two batches in one transaction (the staging table is reused)', async () => {
    const counts = await t.scope().transaction(async (client) => {
      const a = await upsertResults(client, [result(), result()], { seenAt: new Date() });
      const b = await upsertResults(client, [result()], { seenAt: new Date() });
      return [a, b];
    });
    expect(counts).toEqual([
      { inserted: 2, updated: 0, unchanged: 0 },
      { inserted: 1, updated: 0, unchanged: 0 },
    ]);
  });
});
