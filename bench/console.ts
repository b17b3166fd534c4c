/**
 * The operator console's page render time and memory: a warehouse with 10,000 runs and
 * 100,000 provisioning audit rows, the console started beside an app as the worker has it,
 * then Overview, Runs (all, one resource with its chart) and Provisioning fetched over HTTP
 * by a logged-in operator. RSS overhead, the measure: two `trainsync worker` processes,
 * one with the console, that have each first done the same real work (a first load of
 * WORK_RESULTS results from a simulator child, each into a database of its own), then the
 * console's burst of pages, and the difference of their RSS. Beside it, the same pair idle
 * (no job run: the stricter view), the idle pair with a capped young generation, and the
 * console in this process (RSS before it starts and after it has served every page).
 *
 *   node --expose-gc bin/run-ts.js bench/console.ts
 *
 * Uses its own databases on DATABASE_URL's server and its own Redis prefixes; drops them.
 */
import { owner } from '../test/helpers/owner.ts';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { provisionDeps } from '../src/commands/options/provision-deps.ts';
import { startConsole } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/settings/console-users.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { createBenchDatabase } from './admin-query.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { startWorkerChild } from './worker-child.ts';

const RUNS = 10_000;
const AUDIT_ROWS = 100_000;
const SAMPLES = 60;
const RESOURCES = ['courses', 'filters', 'groups', 'users', 'results', 'seats'];
/** The first load each worker runs before the pages: a worker that has done its job, not one just started. */
const WORK_RESULTS = 40_000;

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const rssMb = (): number => {
  gc();
  return Math.round(process.memoryUsage().rss / 1024 / 1024);
};
/** The live JavaScript heap after a full collection: what the console holds, beside what V8 keeps reserved. */
const heapMb = (): number => {
  gc();
  return Math.round(process.memoryUsage().heapUsed / 1024 / 1024);
};

/** A process's resident set (VmRSS), in MB. */
const rssOfMb = (pid: number): number => Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

async function logLine(output: () => string, exited: () => boolean, message: string): Promise<Record<string, unknown>> {
  for (;;) {
    const line = output().split('\n').find((l) => l.includes(`"msg":"${message}"`));
    if (line) return JSON.parse(line) as Record<string, unknown>;
    if (exited()) throw new Error(`a worker exited before "${message}":\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Logs in as the bench operator; the cookie header of the session. */
async function logIn(base: string): Promise<string> {
  const loginPage = await fetch(`${base}/login`);
  const csrfCookie = (loginPage.headers.getSetCookie()[0] ?? '').split(';')[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await loginPage.text())![1]!;
  const login = await fetch(`${base}/login`, { method: 'POST', redirect: 'manual', headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: token, username: 'bench', password: 'bench-operator-pass' }) });
  const session = (login.headers.getSetCookie().find((c) => c.startsWith('trainsync_console=')) ?? '').split(';')[0]!;
  if (!session) throw new Error(`log-in failed: ${login.status}`);
  return `${csrfCookie}; ${session}`;
}

const PAGES: Record<string, string> = { overview: '/', runs: '/runs', runsOfResults: '/runs?resource=results', runsPage50: '/runs?page=50', provisioning: '/provisioning', auditSearch: '/provisioning?who=person42', webhooks: '/webhooks', people: '/people' };

/** A worker's own database and queue prefix, for a pair whose workers each run a sync of their own. */
interface OwnPlace {
  DATABASE_URL: string;
  TRAINSYNC_QUEUE_PREFIX: string;
}

/** `trainsync sync results --full` in a child process: it enqueues the job and waits; the connected worker runs it. */
function syncResults(env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, ['bin/trainsync.js', 'sync', 'results', '--full'], { env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString('utf8')).slice(-4_000)));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sync results exited with ${code}:\n${err}`)))));
}

async function resultsIn(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ n: number }>('select count(*)::int as n from training.results')).rows[0]!.n;
  } finally {
    await client.end();
  }
}

interface PairFigures {
  withoutConsoleMb: number;
  withConsoleMb: number;
  overheadMb: number;
  withConsoleStartedMb: number;
  /** Both workers' RSS after their sync, before the pages (only when they worked). */
  afterWorkMb?: { withoutConsole: number; withConsole: number };
  workSeconds?: number;
}

/**
 * The issue's own measure: two `trainsync worker --no-schedules` processes, one without the
 * console and one with it after serving every page SAMPLES times; the RSS of each (VmRSS), and the
 * difference. The client is this process, so its memory is not counted.
 *
 * `work`: each worker first runs the same first load of results, at the same time, from the
 * simulator, each on its own queue prefix and database (the console's keeps the seeded runs and
 * audit rows), so the console is measured beside a worker that has done its job, whose V8 heap has
 * grown as any sync grows it. Without it both are idle: the baseline is a worker that has run no job
 * at all, its young generation still at its 1 MB start (the stricter view).
 * `nodeOptions`: the same V8 flags for both (NODE_OPTIONS), e.g. a young generation capped.
 */
async function workersSideBySide(env: Record<string, string>, options: { nodeOptions?: string; work?: { plain: OwnPlace; withConsole: OwnPlace } } = {}): Promise<PairFigures> {
  const { TRAINSYNC_CONSOLE_USERS: _users, ...withoutUsers } = env;
  const flags: Record<string, string> = options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {};
  const plainEnv = { ...withoutUsers, ...flags, ...options.work?.plain };
  const consoleEnv = { ...env, ...flags, ...options.work?.withConsole };
  const plain = startWorkerChild({ ...plainEnv, LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  const withConsole = startWorkerChild({ ...consoleEnv, LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  try {
    await logLine(plain.output, () => plain.child.exitCode !== null, 'worker started');
    const serving = await logLine(withConsole.output, () => withConsole.child.exitCode !== null, 'serving the console');
    await logLine(withConsole.output, () => withConsole.child.exitCode !== null, 'worker started');
    const withConsoleStartedMb = rssOfMb(withConsole.child.pid!);
    let work: Pick<PairFigures, 'afterWorkMb' | 'workSeconds'> = {};
    if (options.work) {
      // Both syncs at once, so neither worker has idled longer than the other when measured.
      const t0 = performance.now();
      await Promise.all([syncResults(plainEnv), syncResults(consoleEnv)]);
      const workSeconds = Number(((performance.now() - t0) / 1000).toFixed(1));
      for (const place of [options.work.plain, options.work.withConsole]) {
        const n = await resultsIn(place.DATABASE_URL);
        if (n !== WORK_RESULTS) throw new Error(`a worker's sync loaded ${n} results, not ${WORK_RESULTS}`);
      }
      work = { afterWorkMb: { withoutConsole: rssOfMb(plain.child.pid!), withConsole: rssOfMb(withConsole.child.pid!) }, workSeconds };
    }
    const base = `http://127.0.0.1:${String(serving.port)}`;
    const cookie = await logIn(base);
    for (let i = 0; i < SAMPLES; i++) for (const url of Object.values(PAGES)) await (await fetch(`${base}${url}`, { headers: { cookie } })).text();
    // Both idle a moment, so neither is measured in the middle of a burst.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const withoutConsoleMb = rssOfMb(plain.child.pid!);
    const withConsoleMb = rssOfMb(withConsole.child.pid!);
    return { withoutConsoleMb, withConsoleMb, overheadMb: withConsoleMb - withoutConsoleMb, withConsoleStartedMb, ...work };
  } finally {
    for (const w of [plain, withConsole]) {
      w.child.kill('SIGTERM');
      if (w.child.exitCode === null) await new Promise((resolve) => w.child.once('exit', resolve));
    }
  }
}

const database = await createBenchDatabase();
// The worker without the console, when both work: a database of its own, migrated by the worker.
const plainDatabase = await createBenchDatabase();
const prefix = `bench-console-${randomBytes(4).toString('hex')}`;
const sim = await startSimulatorChild({ seed: 42, sizes: { results: WORK_RESULTS, users: 2_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } });
const hash = await hashConsolePassword('bench-operator-pass', { N: 2 ** 14, r: 8, p: 1 });
const config = loadConfig({ ...process.env, DATABASE_URL: database.url, TRAINSYNC_QUEUE_PREFIX: prefix, TRAINSYNC_CONSOLE_USERS: `bench:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0', TRAINSYNC_METRICS_PORT: '0' });
const log = createLogger('warn');
const app = await createApp(config, log, { jobs: allJobs, migrate: true, redis: 'persistent' });
try {
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, pages, inserted, updated, unchanged, quarantined)
    select 'default', (array[${sql.join(RESOURCES)}])[1 + i % ${RESOURCES.length}], 'incremental', now() - make_interval(mins => ${RUNS} - i),
           now() - make_interval(mins => ${RUNS} - i) + make_interval(secs => 5 + i % 40), case when i % 50 = 0 then 'failed' else 'succeeded' end,
           10 + i % 30, i % 100, i % 300, 1000 + i % 500, i % 7
      from generate_series(1, ${RUNS}) i`.execute(owner(app).db);
  await sql`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, seq, before, after, status, attempts, updated_at)
    select 'default', 'bench:' || i, 'E' || lpad((i % 20000)::text, 6, '0'), 'person' || (i % 20000) || '@example.com',
           (array['disable','enable','add-to-group','create-user'])[1 + i % 4], 0, '{"active":true}'::jsonb, '{"active":false}'::jsonb,
           case when i % 997 = 0 then 'failed' else 'succeeded' end, 1, now() - make_interval(secs => ${AUDIT_ROWS} - i)
      from generate_series(1, ${AUDIT_ROWS}) i`.execute(owner(app).db);
  await sql`analyze`.execute(owner(app).db);
  const workerEnv = {
    DATABASE_URL: database.url,
    REDIS_URL: config.REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    // Called only by the pair that works (a first load of results); the idle pairs run no job.
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    TRAINSYNC_REQUESTS_PER_SECOND: '10000',
    TRAINSYNC_RESULTS_WINDOW_DAYS: '31',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_CONSOLE_PORT: '0',
    TRAINSYNC_CONSOLE_USERS: `bench:operator:${hash}`,
  };
  // The measure: beside a worker that has done its job (the same first load in both).
  const workers = await workersSideBySide(workerEnv, {
    work: {
      plain: { DATABASE_URL: plainDatabase.url, TRAINSYNC_QUEUE_PREFIX: `${prefix}-plain` },
      withConsole: { DATABASE_URL: database.url, TRAINSYNC_QUEUE_PREFIX: `${prefix}-console` },
    },
  });
  // The stricter view: beside a worker that has run no job at all (its young generation still 1 MB).
  const workersIdle = await workersSideBySide(workerEnv);
  // The idle pair with V8's young generation capped at 4 MB a semi-space (default 16) in both: the
  // burst of pages no longer leaves a 32 MB young generation and uncollected old-space garbage in
  // the console's worker, so the difference is what the console itself keeps (docs/operator.md, "Console").
  const workersSmallYoung = await workersSideBySide(workerEnv, { nodeOptions: '--max-semi-space-size=4' });

  // The bench's own HTTP client (fetch) loads before the first figure, so it is not counted as the console's.
  const dummy = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => dummy.listen(0, '127.0.0.1', resolve));
  for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${(dummy.address() as AddressInfo).port}/`)).text();
  dummy.close();
  const rssBefore = rssMb();
  const heapBefore = heapMb();
  const server = (await startConsole({ config, scopes: app.scopes, queue: app.queue, log, health: async () => ({}), repair: (org) => provisionDeps(app, org) }))!;
  const rssStarted = rssMb();
  const base = `http://127.0.0.1:${server.port}`;
  const cookie = await logIn(base);

  const timings: Record<string, { p50Ms: number; p95Ms: number; bytes: number }> = {};
  for (const [name, url] of Object.entries(PAGES)) {
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < SAMPLES + 5; i++) {
      const t0 = performance.now();
      const res = await fetch(`${base}${url}`, { headers: { cookie } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      if (i >= 5) ms.push(performance.now() - t0);
      bytes = body.length;
    }
    ms.sort((a, b) => a - b);
    timings[name] = { p50Ms: Math.round(ms[Math.floor(ms.length * 0.5)]!), p95Ms: Math.round(ms[Math.ceil(ms.length * 0.95) - 1]!), bytes };
  }
  const rssAfter = rssMb();
  const heapAfter = heapMb();
  // Where the RSS is: V8's reserved heap (heapTotal), Buffers and other memory outside the heap (external).
  const breakdown = Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [`${k}Mb`, Math.round(v / 1024 / 1024)]));
  await server.close();
  process.stdout.write(`${JSON.stringify({ runs: RUNS, auditRows: AUDIT_ROWS, samples: SAMPLES, timings, rssBeforeMb: rssBefore, rssStartedMb: rssStarted, rssAfterMb: rssAfter, rssOverheadMb: rssAfter - rssBefore, heapBeforeMb: heapBefore, heapAfterMb: heapAfter, breakdownAfter: breakdown, workResults: WORK_RESULTS, workers, workersIdle, workersSmallYoung })}\n`);
} finally {
  await app.close();
  sim.stop();
  await database.drop();
  await plainDatabase.drop();
  await deleteBenchKeys(config.REDIS_URL, prefix);
}
