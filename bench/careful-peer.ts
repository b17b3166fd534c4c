/**
 * The script a careful engineer would write in a day, as the peer `npm run bench -- sync`
 * compares trainsync with (issue 18): pages fetched 4 at a time by page number, each page
 * upserted as one multi-row `INSERT … ON CONFLICT DO UPDATE` plus its answers through
 * `unnest`, one transaction per page, on a pool of 4 connections. It writes into tables
 * of its own (`peer.*`, the same shape, keys and indexes as `training.*`) in the same
 * database, so both load the same rows from the same simulator on the same server.
 *
 *   node bin/run-ts.js bench/careful-peer.ts '{"url":"…","apiKey":"…","databaseUrl":"…"}'
 *
 * Prints one JSON line: seconds, results written, CPU of this process.
 */
import pg from 'pg';
import { z } from 'zod';

const args = z.object({ url: z.string().url(), apiKey: z.string(), databaseUrl: z.string() }).parse(JSON.parse(process.argv[2] ?? '{}'));

const pageSchema = z.object({
  entities: z.array(
    z.object({
      id: z.string(),
      userId: z.string(),
      courseId: z.string(),
      multiCourseResultId: z.string().nullable(),
      isComplete: z.boolean(),
      dateCompleted: z.string().nullable(),
      score: z.number().nullable(),
      maximumScore: z.number().nullable(),
      passRate: z.number().nullable(),
      courseType: z.string().nullable(),
      resultFilters: z.array(z.string()),
    }),
  ),
  totalEntities: z.number(),
});
type Page = z.infer<typeof pageSchema>;

const COLUMNS = ['result_id', 'user_id', 'course_id', 'multi_course_result_id', 'is_complete', 'date_completed', 'score', 'maximum_score', 'pass_rate', 'course_type'];
const PER_ROW = COLUMNS.length + 1;

async function getPage(page: number): Promise<Page> {
  const response = await fetch(`${args.url}/api/v2/results?page=${page}`, { headers: { authorization: `Bearer ${args.apiKey}` } });
  if (!response.ok) throw new Error(`page ${page}: HTTP ${response.status}`);
  return pageSchema.parse(await response.json());
}

async function writePage(pool: pg.Pool, page: Page): Promise<void> {
  if (page.entities.length === 0) return;
  const values: unknown[] = [];
  const tuples = page.entities.map((r, i) => {
    values.push(r.id, r.userId, r.courseId, r.multiCourseResultId, r.isComplete, r.dateCompleted, r.score, r.maximumScore, r.passRate, r.courseType, new Date());
    const at = i * PER_ROW;
    return `(${COLUMNS.map((_, c) => `$${at + c + 1}`).join(', ')}, $${at + PER_ROW}, $${at + PER_ROW}, $${at + PER_ROW})`;
  });
  const ids = page.entities.map((r) => r.id);
  const answerResults = page.entities.flatMap((r) => r.resultFilters.map(() => r.id));
  const answers = page.entities.flatMap((r) => r.resultFilters);
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `insert into peer.results (${COLUMNS.join(', ')}, first_seen_at, last_seen_at, updated_at) values ${tuples.join(', ')}
       on conflict (org, result_id) do update set ${COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(', ')},
         last_seen_at = excluded.last_seen_at, updated_at = excluded.updated_at`,
      values,
    );
    // By the table's key (org, result_id, answer_id): result_id alone would scan every answer at every page.
    await client.query(
      "delete from peer.result_filter_answers where org = 'default' and result_id = any ($1::uuid[]) and (result_id, answer_id) not in (select * from unnest($2::uuid[], $3::uuid[]))",
      [ids, answerResults, answers],
    );
    await client.query('insert into peer.result_filter_answers (result_id, answer_id) select * from unnest($1::uuid[], $2::uuid[]) on conflict do nothing', [answerResults, answers]);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const pool = new pg.Pool({ connectionString: args.databaseUrl, max: 4 });
try {
  await pool.query(`
    create schema if not exists peer;
    create table if not exists peer.results (like training.results including all);
    create table if not exists peer.result_filter_answers (like training.result_filter_answers including all);
    -- One organisation: the peer writes the column our loader writes, without naming it.
    alter table peer.results alter column org set default 'default';
    alter table peer.result_filter_answers alter column org set default 'default'`);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const first = await getPage(1);
  const pages = Math.max(1, Math.ceil(first.totalEntities / 50));
  let next = 2;
  let written = first.entities.length;
  await writePage(pool, first);
  // 4 at a time by page number: each lane takes the next page as soon as its last is written.
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next <= pages) {
        const page = await getPage(next++);
        await writePage(pool, page);
        written += page.entities.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`${JSON.stringify({ seconds: Number(seconds.toFixed(2)), written, cpuMicrosPerResult: Number(((cpu.user + cpu.system) / written).toFixed(1)) })}\n`);
} finally {
  await pool.end();
}
