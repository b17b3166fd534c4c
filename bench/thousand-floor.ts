/**
 * The least Postgres CPU the thousand-organisation load can cost: the same rows (2,000 results
 * an organisation, 2 filter answers each) written by a raw `COPY` straight into copies of the
 * warehouse tables with their keys and indexes, as the table's owner (no row security, no
 * staging, no run rows, no checkpoints), one transaction per organisation, `lanes` at once
 * as the workers would. It prints Postgres' CPU per result (its backends, from /proc) beside
 * the wall time, so the thousand-organisation bench's wall-time target can be read against
 * what the database alone needs on the same two cores.
 *
 *   node bin/run-ts.js bench/thousand-floor.ts '{"orgs":1000,"results":2000,"lanes":4}'
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { z } from 'zod';
import { copyLines, type CopyValue } from '../src/warehouse/copy-text.ts';
import { migrate } from '../src/warehouse/migrator.ts';
import { createPool } from '../src/warehouse/pool.ts';
import { createLogger } from '../src/runtime/log.ts';
import { createBenchDatabase } from './admin-query.ts';
import { BackendCpuSampler } from './sync-proc-cpu.ts';
import { syntheticResults } from './warehouse-load.ts';

const args = z
  .object({
    orgs: z.number().int().positive().default(1_000),
    results: z.number().int().positive().default(2_000),
    lanes: z.number().int().positive().default(4),
    /** An organisation's users and courses, as in the thousand-organisation bench's simulator. */
    users: z.number().int().positive().default(10),
    courses: z.number().int().positive().default(4),
  })
  .strict()
  .parse(JSON.parse(process.argv[2] ?? '{}'));

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

const database = await createBenchDatabase();
const pool = createPool(database.url, { max: args.lanes + 2, applicationName: 'trainsync-bench-floor' });
try {
  await migrate(pool, createLogger('warn'));
  await pool.query(`
    create table public.raw_results (like training.results including defaults including indexes);
    create table public.raw_answers (like training.result_filter_answers including defaults including indexes);`);
  const now = new Date().toISOString();
  /** One organisation's rows as COPY text: new ids, as a first load has them; its users and courses as few as the bench's simulator gives one. */
  const orgCopy = (org: string): { results: string; answers: string } => {
    const rows = syntheticResults(args.results);
    const users = Array.from({ length: args.users }, () => randomUUID());
    const courses = Array.from({ length: args.courses }, () => randomUUID());
    return {
      results: copyLines(rows.map((r, i): CopyValue[] => [org, r.id, users[i % users.length]!, courses[i % courses.length]!, r.multiCourseResultId, r.isComplete, r.dateCompleted, r.score, r.maximumScore, r.passRate, r.courseType, null, now, now, now])),
      answers: copyLines(rows.flatMap((r) => r.resultFilters.map((a): CopyValue[] => [org, r.id, a]))),
    };
  };
  const cpuPool = new pg.Pool({ connectionString: database.url, max: 1 });
  const sampler = new BackendCpuSampler(cpuPool, new URL(database.url).pathname.slice(1));
  let next = 0;
  const lane = async (): Promise<void> => {
    const client = await pool.connect();
    try {
      for (let i = next++; i < args.orgs; i = next++) {
        const copy = orgCopy(`o${String(i).padStart(4, '0')}`);
        await client.query('begin');
        await pipeline(Readable.from([copy.results]), client.query(copyFrom(`copy public.raw_results (org, result_id, user_id, course_id, multi_course_result_id, is_complete,
          date_completed, score, maximum_score, pass_rate, course_type, extra, first_seen_at, last_seen_at, updated_at) from stdin`)));
        await pipeline(Readable.from([copy.answers]), client.query(copyFrom('copy public.raw_answers (org, result_id, answer_id) from stdin')));
        await client.query('commit');
      }
    } finally {
      client.release();
    }
  };
  await sampler.start();
  const started = performance.now();
  await Promise.all(Array.from({ length: args.lanes }, lane));
  const wallSeconds = (performance.now() - started) / 1000;
  const postgresCpuSeconds = (await sampler.stop()) / 1e6;
  await cpuPool.end();
  const total = args.orgs * args.results;
  process.stdout.write(
    `${JSON.stringify({ args, results: total, wallSeconds: round(wallSeconds), postgresCpuSeconds: round(postgresCpuSeconds), postgresCpuMicrosPerResult: round((postgresCpuSeconds * 1e6) / total) })}\n`,
  );
} finally {
  await pool.end();
  await database.drop();
}
