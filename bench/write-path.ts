/**
 * Where a results batch's write goes: per batch of a full walk's write (the rows, their
 * answers, the sightings, the run's counts and the checkpoint, one transaction), the
 * milliseconds of each part and Postgres' CPU per row, for a first load into empty
 * tables and a full reload with 10% changed (the upsert, with sightings); and
 * `EXPLAIN (ANALYZE, BUFFERS)` of one batch's upsert and answers (on stderr).
 *
 *   node bin/run-ts.js bench/write-path.ts '{"rows":100000,"batchRows":2000,"firstLoadPath":true,"synchronousCommit":false}'
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { createLogger } from '../src/runtime/log.ts';
import type { Result } from '../src/platform/schemas.ts';
import { results as resultsResource } from '../src/sync/resources/results.ts';
import { explainStagedBatch, StagedBatch, upsertStagedBatch, type WritePhase } from '../src/warehouse/load-staged.ts';
import { migrate } from '../src/warehouse/migrator.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { addRunCounts } from '../src/sync/runs-store.ts';
import { saveCheckpoint } from '../src/sync/sync-state.ts';
import { createScopes, type OrgScope, type OrgTx } from '../src/warehouse/scope.ts';
import { createBenchDatabase } from './admin-query.ts';
import { syntheticResults } from './warehouse-load.ts';

const args = z
  .object({
    rows: z.number().int().positive().default(100_000),
    batchRows: z.number().int().positive().default(5_000),
    synchronousCommit: z.boolean().default(false),
    /** The first load as trainsync writes one now: plain inserts, no sightings. False: the upsert with sightings, as before issue 18. */
    firstLoadPath: z.boolean().default(true),
  })
  .parse(JSON.parse(process.argv[2] ?? '{}'));

type Phase = WritePhase | 'counts+checkpoint' | 'commit';
const PHASES: Phase[] = ['stage', 'upsert', 'answers', 'sightings', 'counts+checkpoint', 'commit'];

/** `fn`'s value, from a transaction rolled back after it (EXPLAIN ANALYZE writes what it plans). */
async function rolledBack<T>(scope: OrgScope, fn: (tx: OrgTx) => Promise<T>): Promise<T> {
  const undo = new Error('roll back');
  let value: T | undefined;
  await scope.transaction(async (tx) => {
    value = await fn(tx);
    throw undo;
  }).catch((error: unknown) => {
    if (error !== undo) throw error;
  });
  return value as T;
}

const database = await createBenchDatabase();
const pool = createPool(database.url, { max: 2, applicationName: 'trainsync-bench' });
try {
  await migrate(pool, createLogger('silent'));
  const { rows: [run] } = await pool.query<{ id: number }>(`insert into trainsync.runs (org, resource, mode, status) values ('default', 'results', 'full', 'running') returning id`);
  const runId = run!.id;
  // The owner's pool, unbound: the write path without row security's scoping (bench/sync-rls.ts measures that).
  const scope = createScopes(pool, createLogger('silent'), { rowSecurity: false }).scope(DEFAULT_ORG);

  // Postgres' own CPU for the load (its backends for this database, same host): a figure
  // that other processes on the machine disturb far less than elapsed time.
  const backendCpuMs = async (): Promise<Map<number, number>> => {
    const { rows } = await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()');
    const cpu = new Map<number, number>();
    for (const { pid } of rows) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
      if (!stat) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / 100);
    }
    return cpu;
  };
  const load = async (results: readonly Result[], firstLoad: boolean): Promise<Record<string, number>> => {
    const cpuBefore = await backendCpuMs();
    const totals = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
    const started = performance.now();
    for (let i = 0; i < results.length; i += args.batchRows) {
      const batch = new StagedBatch(resultsResource.table);
      for (const r of results.slice(i, i + args.batchRows)) batch.add(r);
      let mark = 0;
      await scope.transaction(async (tx) => {
        if (!args.synchronousCommit) await tx.client.query('set local synchronous_commit = off');
        const loaded = await upsertStagedBatch(tx, batch, { seenAt: new Date(), runId, trackSightings: !firstLoad, fresh: firstLoad, onPhase: (phase, ms) => (totals[phase] += ms) });
        mark = performance.now();
        await addRunCounts(tx.db, runId, { pages: 40, ...loaded });
        await saveCheckpoint(tx, 'bench:full', { nextPage: i / 50 + 1, total: results.length, drifted: false }, runId);
        totals['counts+checkpoint'] += performance.now() - mark;
        mark = performance.now();
      });
      totals.commit += performance.now() - mark;
      batch.release();
    }
    const ms = performance.now() - started;
    let serverCpuMs = 0;
    for (const [pid, after] of await backendCpuMs()) serverCpuMs += after - (cpuBefore.get(pid) ?? 0);
    const batches = Math.ceil(results.length / args.batchRows);
    return {
      rowsPerSecond: Math.round((results.length / ms) * 1000),
      postgresCpuMicrosPerRow: Number(((serverCpuMs * 1000) / results.length).toFixed(1)),
      ...Object.fromEntries(PHASES.map((p) => [`${p}MsPerBatch`, Number((totals[p] / batches).toFixed(2))])),
    };
  };

  const results = syntheticResults(args.rows);
  const first = await load(results, args.firstLoadPath);
  await pool.query('delete from trainsync.result_sightings');
  await pool.query('vacuum analyze training.results, training.result_filter_answers');
  const changed = results.map((r, i) => (i % 10 === 0 ? { ...r, score: (r.score ?? 0) + 1, resultFilters: [r.resultFilters[0]!, randomUUID()] } : r));
  const reload = await load(changed, false);

  const batch = new StagedBatch(resultsResource.table);
  for (const r of changed.slice(0, args.batchRows).map((r, i) => (i % 10 === 1 ? { ...r, score: (r.score ?? 0) + 1 } : r))) batch.add(r);
  const plans = await rolledBack(scope, (tx) => explainStagedBatch(tx, batch, new Date()));
  const fresh = new StagedBatch(resultsResource.table);
  for (const r of syntheticResults(args.batchRows)) fresh.add(r);
  const freshPlans = await rolledBack(scope, (tx) => explainStagedBatch(tx, fresh, new Date()));
  process.stderr.write(`\n-- upsert of one batch of ${args.batchRows} new results\n${freshPlans.upsert}\n\n-- answers\n${freshPlans.answers}\n\n`);
  process.stderr.write(`\n-- upsert of one batch of ${args.batchRows} (reload, 10% changed)\n${plans.upsert}\n\n-- answers\n${plans.answers}\n\n`);
  process.stdout.write(`${JSON.stringify({ ...args, firstLoad: first, reload10PercentChanged: reload })}\n`);
} finally {
  await pool.end();
  await database.drop();
}
