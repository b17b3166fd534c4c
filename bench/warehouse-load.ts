/**
 * Warehouse load throughput: raw COPY (the ceiling) against the loader trainsync uses
 * (COPY into a temp staging table, then INSERT … ON CONFLICT DO UPDATE … WHERE … IS
 * DISTINCT FROM, in 5,000-row transactions), and a reload with 10% of rows changed.
 *
 *   node bin/run-ts.js bench/warehouse-load.ts [rows]
 *
 * Uses its own database on DATABASE_URL's server (default 127.0.0.1) and drops it.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { createLogger } from '../src/runtime/log.ts';
import type { Result } from '../src/platform/schemas.ts';
import { copyLines, type CopyValue } from '../src/warehouse/copy-text.ts';
import type { LoadCounts } from '../src/warehouse/load-counts.ts';
import { results as resultsResource } from '../src/sync/resources/results.ts';
import { upsertStaged } from '../src/warehouse/load-staged.ts';
import { migrate } from '../src/warehouse/migrator.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { lendFrom, withTransaction } from '../src/warehouse/transaction.ts';
import { createScopes } from '../src/warehouse/scope.ts';
import { createBenchDatabase } from './admin-query.ts';

const BATCH = 5_000;

export interface WarehouseLoadFigures {
  rows: number;
  answersPerRow: number;
  batchRows: number;
  /** COPY of results and answers into identical plain tables (same keys and indexes), one transaction. */
  rawCopyRowsPerSecond: number;
  /** The same COPY into tables without keys or indexes: the bare ceiling. */
  rawCopyNoIndexRowsPerSecond: number;
  /** upsertResults into empty tables, one transaction per batch. */
  upsertRowsPerSecond: number;
  /** The same rows again with 10% changed (score and one answer). */
  reloadChangedRowsPerSecond: number;
  /** The same rows again, nothing changed. */
  reloadUnchangedRowsPerSecond: number;
  upsertVsRawCopy: number;
  reloadChangedVsUpsert: number;
  firstLoad: LoadCounts;
  reloadChanged: LoadCounts;
  reloadUnchanged: LoadCounts;
}

export function syntheticResults(rows: number): Result[] {
  const courses = Array.from({ length: 200 }, () => randomUUID());
  const answers = Array.from({ length: 40 }, () => randomUUID());
  const start = Date.UTC(2020, 0, 1);
  return Array.from({ length: rows }, (_, i) => {
    const completed = new Date(start + i * 97_000).toISOString().replace('Z', '000+00:00');
    return {
      id: randomUUID(),
      userId: randomUUID(),
      courseId: courses[i % courses.length]!,
      multiCourseResultId: null,
      isComplete: true,
      dateCompleted: completed,
      score: i % 11,
      maximumScore: 10,
      passRate: 70,
      courseType: 'SINGLE_COURSE',
      resultFilters: [answers[i % 20]!, answers[20 + (i % 20)]!],
    };
  });
}

async function rawCopy(pool: pg.Pool, results: readonly Result[], indexes: boolean): Promise<number> {
  const like = indexes ? 'including defaults including indexes' : 'including defaults';
  await pool.query(`
    drop table if exists public.raw_results, public.raw_answers;
    create table public.raw_results (like training.results ${like});
    create table public.raw_answers (like training.result_filter_answers ${like});
    -- One organisation, as the loader writes it: a constant the COPY text does not carry.
    alter table public.raw_results alter column org set default 'default';
    alter table public.raw_answers alter column org set default 'default';`);
  const now = new Date().toISOString();
  function* resultChunks(): Generator<string> {
    for (let i = 0; i < results.length; i += BATCH) {
      yield copyLines(
        results.slice(i, i + BATCH).map((r): CopyValue[] => [
          r.id, r.userId, r.courseId, r.multiCourseResultId, r.isComplete, r.dateCompleted, r.score,
          r.maximumScore, r.passRate, r.courseType, null, now, now, now,
        ]),
      );
    }
  }
  function* answerChunks(): Generator<string> {
    for (let i = 0; i < results.length; i += BATCH) {
      yield copyLines(results.slice(i, i + BATCH).flatMap((r) => r.resultFilters.map((a): CopyValue[] => [r.id, a])));
    }
  }
  const started = performance.now();
  await withTransaction(lendFrom(pool), async ({ client }) => {
    await pipeline(
      Readable.from(resultChunks()),
      client.query(copyFrom(`copy public.raw_results (result_id, user_id, course_id, multi_course_result_id, is_complete,
        date_completed, score, maximum_score, pass_rate, course_type, extra, first_seen_at, last_seen_at, updated_at) from stdin`)),
    );
    await pipeline(Readable.from(answerChunks()), client.query(copyFrom('copy public.raw_answers (result_id, answer_id) from stdin')));
  });
  return performance.now() - started;
}

async function upsertAll(pool: pg.Pool, results: readonly Result[]): Promise<{ ms: number; counts: LoadCounts }> {
  const counts: LoadCounts = { inserted: 0, updated: 0, unchanged: 0 };
  const scope = createScopes(pool, createLogger('silent'), { rowSecurity: false }).scope(DEFAULT_ORG);
  const started = performance.now();
  for (let i = 0; i < results.length; i += BATCH) {
    const batch = results.slice(i, i + BATCH);
    const loaded = await scope.transaction((tx) => upsertStaged(tx, resultsResource.table, batch, { seenAt: new Date() }));
    counts.inserted += loaded.inserted;
    counts.updated += loaded.updated;
    counts.unchanged += loaded.unchanged;
  }
  return { ms: performance.now() - started, counts };
}

/** Runs the three loads on a database of its own (dropped at the end) and returns the figures. */
export async function benchWarehouseLoad(rows = 200_000): Promise<WarehouseLoadFigures> {
  const database = await createBenchDatabase();
  const url = database.url;
  const pool = createPool(url, { max: 2, applicationName: 'trainsync-bench' });
  try {
    await migrate(pool, createLogger('silent'));
    const results = syntheticResults(rows);
    const rawBareMs = await rawCopy(pool, results, false);
    const rawMs = await rawCopy(pool, results, true);
    const first = await upsertAll(pool, results);
    await pool.query('vacuum analyze training.results, training.result_filter_answers');

    const changed = results.map((r, i) =>
      i % 10 === 0 ? { ...r, score: (r.score ?? 0) + 1, resultFilters: [r.resultFilters[0]!, randomUUID()] } : r,
    );
    const reload = await upsertAll(pool, changed);
    const again = await upsertAll(pool, changed);

    const perSecond = (ms: number): number => Math.round((rows / ms) * 1000);
    const raw = perSecond(rawMs);
    const upsert = perSecond(first.ms);
    const reloadChanged = perSecond(reload.ms);
    return {
      rows,
      answersPerRow: 2,
      batchRows: BATCH,
      rawCopyRowsPerSecond: raw,
      rawCopyNoIndexRowsPerSecond: perSecond(rawBareMs),
      upsertRowsPerSecond: upsert,
      reloadChangedRowsPerSecond: reloadChanged,
      reloadUnchangedRowsPerSecond: perSecond(again.ms),
      upsertVsRawCopy: Math.round((upsert / raw) * 100) / 100,
      reloadChangedVsUpsert: Math.round((reloadChanged / upsert) * 100) / 100,
      firstLoad: first.counts,
      reloadChanged: reload.counts,
      reloadUnchanged: again.counts,
    };
  } finally {
    await pool.end();
    await database.drop();
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rows = process.argv[2] ? Number.parseInt(process.argv[2], 10) : 200_000;
  const figures = await benchWarehouseLoad(rows);
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
