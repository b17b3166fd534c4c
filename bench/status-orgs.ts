/**
 * `trainsync status --org all` with many organisations, as a user runs it: 1,000 organisations
 * registered (an orgs file, `trainsync migrate`), each with 30 days of runs of every resource
 * (180,000 runs), a few failed, running, stale or never run, some with unfinished result
 * windows or provisioning actions needing attention. Runs the text report and --json, and
 * prints for each: wall time, output lines and bytes, peak RSS of the CLI, and the transactions
 * Postgres committed on the bench's database meanwhile (how many statements it took).
 *
 * Run: node bin/run-ts.js bench/status-orgs.ts                       (1,000 organisations)
 *      node bin/run-ts.js bench/status-orgs.ts '{"orgs":200}'
 *      node bin/run-ts.js bench/status-orgs.ts '{"root":"/path/to/another/checkout"}'  (its CLI, same data)
 * Prints one JSON line with the figures last.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { orgFacts } from '../src/commands/status/status-data.ts';
import { createDb, createPool } from '../src/warehouse/pool.ts';
import { createBenchDatabase } from './admin-query.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = z
  .object({ orgs: z.number().int().min(2).max(5_000).default(1_000), days: z.number().int().min(1).default(30), root: z.string().default(ROOT) })
  .strict()
  .parse(JSON.parse(process.argv[2] ?? '{}'));
const slug = (i: number): string => `c${String(i).padStart(4, '0')}`;
const say = (line: string): void => void process.stdout.write(`${line}\n`);

interface Run {
  code: number | null;
  /** The summary's first lines (from "Organisations:") and its last. */
  sample: string[];
  ms: number;
  lines: number;
  bytes: number;
  peakRssMb: number;
  transactions: number;
}

function peakRss(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function commits(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Wait for the CLI's sessions to be gone: a backend reports its counts as it exits.
    for (let i = 0; i < 200; i++) {
      const { rows } = await client.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
      if (rows[0]!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await client.query('select pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = current_database()');
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function cli(cliArgs: string[], env: Record<string, string>, url: string): Promise<Run> {
  const before = await commits(url);
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(args.root, 'bin/trainsync.js'), ...cliArgs], { cwd: args.root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let lines = 0;
  let bytes = 0;
  let peak = 0;
  let stderr = '';
  let head = '';
  child.stdout.on('data', (chunk: Buffer) => {
    if (head.length < 20_000) head += chunk.toString('utf8');
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines += 1;
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  const sampler = setInterval(() => (peak = Math.max(peak, peakRss(child.pid!))), 20);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearInterval(sampler);
  const ms = performance.now() - started;
  if (code !== 0) say(`trainsync ${cliArgs.join(' ')} exited ${code}: ${stderr}`);
  const all = head.split('\n');
  const from = all.findIndex((line) => line.startsWith('Organisations:'));
  const sample = from < 0 ? [] : [...all.slice(from, from + 8), '…', ...all.slice(-2)];
  return { code, sample, ms: Math.round(ms), lines, bytes, peakRssMb: Math.round(peak), transactions: (await commits(url)) - before };
}

const database = await createBenchDatabase();
const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-status-bench-'));
try {
  const file = path.join(dir, 'orgs.json');
  await writeFile(file, JSON.stringify({ organisations: Array.from({ length: args.orgs }, (_, i) => ({ slug: slug(i + 1), name: `Client ${i + 1}`, apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'ORG_KEY' } })) }));
  const env = { TRAINSYNC_ORGS_FILE: file, ORG_KEY: 'not-used', DATABASE_URL: database.url, TRAINSYNC_QUEUE_PREFIX: `trainsync-status-bench-${process.pid}`, LOG_LEVEL: 'warn', COLUMNS: '100' };
  const migrate = await cli(['migrate'], env, database.url);
  if (migrate.code !== 0) throw new Error('migrate failed');
  const owner = new pg.Client({ connectionString: database.url });
  await owner.connect();
  try {
    // Every organisation but the last 5% ran every resource once a day; 2% failed last, 1% are running, 1% stale.
    await owner.query(
      `insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, inserted)
       select 'c' || lpad(i::text, 4, '0'), r, 'incremental', now() - make_interval(days => d, hours => case when i % 100 = 7 then 72 else 1 end),
              now() - make_interval(days => d, hours => case when i % 100 = 7 then 72 else 1 end) + interval '1 minute', 'succeeded', 10
       from generate_series(1, $1::int) i, unnest(array['courses','filters','groups','users','results','seats']) r, generate_series(0, $2::int - 1) d
       where i <= $1 * 0.95`,
      [args.orgs, args.days],
    );
    await owner.query(
      `insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, error)
       select 'c' || lpad(i::text, 4, '0'), 'results', 'incremental', now() - interval '10 minutes', now() - interval '9 minutes', 'failed', 'PLATFORM_ERROR: 503 after 6 retries'
       from generate_series(1, $1::int) i where i % 50 = 3 and i <= $1 * 0.95`,
      [args.orgs],
    );
    await owner.query(
      `insert into trainsync.runs (org, resource, mode, started_at, status)
       select 'c' || lpad(i::text, 4, '0'), 'users', 'full', now() - interval '2 minutes', 'running'
       from generate_series(1, $1::int) i where i % 100 = 5 and i <= $1 * 0.95`,
      [args.orgs],
    );
    await owner.query(
      `insert into trainsync.unfinished_windows (org, resource, window_key, reason)
       select 'c' || lpad(i::text, 4, '0'), 'results', '2024-03-0' || k || '/2024-03-1' || k, 'the bench'
       from generate_series(1, $1::int) i, generate_series(1, 3) k where i % 33 = 1`,
      [args.orgs],
    );
    await owner.query('analyze');
  } finally {
    await owner.end();
  }
  // The summary's statements alone (as the owner, five pages of 200), beside the CLI's start-up.
  const pool = createPool(database.url, { max: 1 });
  const slugs = Array.from({ length: args.orgs }, (_, i) => slug(i + 1));
  const resources = ['courses', 'filters', 'groups', 'results', 'seats', 'users'];
  const sqlStarted = performance.now();
  for (let at = 0; at < slugs.length; at += 200) await orgFacts(createDb(pool), slugs.slice(at, at + 200), resources);
  const summarySqlMs = Math.round(performance.now() - sqlStarted);
  await pool.end();
  say(`the summary's statements: ${summarySqlMs} ms`);
  const text = await cli(['status', '--org', 'all'], env, database.url);
  const json = await cli(['status', '--org', 'all', '--json'], env, database.url);
  const one = await cli(['status', '--org', slug(1)], env, database.url);
  say(text.sample.join('\n'));
  say(`status --org all: ${text.ms} ms, ${text.lines} lines, ${text.bytes} bytes, peak RSS ${text.peakRssMb} MB, ${text.transactions} transactions`);
  say(`status --org all --json: ${json.ms} ms, ${json.lines} lines, ${json.bytes} bytes, peak RSS ${json.peakRssMb} MB, ${json.transactions} transactions`);
  say(`status --org ${slug(1)}: ${one.ms} ms, ${one.lines} lines, ${one.transactions} transactions`);
  const { sample: _sample, ...textFigures } = text;
  say(JSON.stringify({ summarySqlMs, orgs: args.orgs, runs: Math.round(args.orgs * 0.95) * 6 * args.days, root: args.root, text: textFigures, json: { ...json, sample: undefined }, one: { ...one, sample: undefined } }));
} finally {
  await database.drop();
  await rm(dir, { recursive: true, force: true });
}
