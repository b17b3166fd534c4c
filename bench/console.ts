/**
 * The operator console's page render time and memory: a warehouse with 10,000 runs and
 * 100,000 provisioning audit rows, the console started beside an app as the worker has it,
 * then Overview, Runs (all, one resource with its chart) and Provisioning fetched over HTTP
 * by a logged-in operator. RSS overhead: the process's RSS after a collection before the
 * console starts (the bench's fetch client already loaded), and again after it has served every page;
 * also the RSS right after it started, before any page.
 *
 *   node --expose-gc bin/run-ts.js bench/console.ts
 *
 * Uses its own database on DATABASE_URL's server and its own Redis prefix; drops both.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { provisionDeps } from '../src/commands/provision-deps.ts';
import { startConsole } from '../src/console/server.ts';
import { hashConsolePassword } from '../src/lib/console-users.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { createBenchDatabase } from './admin-query.ts';
import { startWorkerChild } from './worker-child.ts';

const RUNS = 10_000;
const AUDIT_ROWS = 100_000;
const SAMPLES = 60;
const RESOURCES = ['courses', 'filters', 'groups', 'users', 'results', 'seats'];

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

/**
 * The issue's own measure: two \`trainsync worker --no-schedules\` processes on the same warehouse, one
 * without the console and one with it after serving every page SAMPLES times; the RSS of each (VmRSS),
 * and the difference. The client is this process, so its memory is not counted. \`nodeOptions\`: the
 * same V8 flags for both (NODE_OPTIONS), e.g. a young generation capped to tell the console's own
 * memory from the young generation V8 grows for any burst of work and keeps until a full collection.
 */
async function workersSideBySide(env: Record<string, string>, nodeOptions?: string): Promise<{ withoutConsoleMb: number; withConsoleMb: number; overheadMb: number; withConsoleStartedMb: number }> {
  const { TRAINSYNC_CONSOLE_USERS: _users, ...withoutUsers } = env;
  const flags: Record<string, string> = nodeOptions ? { NODE_OPTIONS: nodeOptions } : {};
  const plain = startWorkerChild({ ...withoutUsers, ...flags, LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  const withConsole = startWorkerChild({ ...env, ...flags, LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  try {
    await logLine(plain.output, () => plain.child.exitCode !== null, 'worker started');
    const serving = await logLine(withConsole.output, () => withConsole.child.exitCode !== null, 'serving the console');
    await logLine(withConsole.output, () => withConsole.child.exitCode !== null, 'worker started');
    const withConsoleStartedMb = rssOfMb(withConsole.child.pid!);
    const base = `http://127.0.0.1:${String(serving.port)}`;
    const cookie = await logIn(base);
    for (let i = 0; i < SAMPLES; i++) for (const url of Object.values(PAGES)) await (await fetch(`${base}${url}`, { headers: { cookie } })).text();
    // Both idle a moment, so neither is measured in the middle of a burst.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const withoutConsoleMb = rssOfMb(plain.child.pid!);
    const withConsoleMb = rssOfMb(withConsole.child.pid!);
    return { withoutConsoleMb, withConsoleMb, overheadMb: withConsoleMb - withoutConsoleMb, withConsoleStartedMb };
  } finally {
    for (const w of [plain, withConsole]) {
      w.child.kill('SIGTERM');
      if (w.child.exitCode === null) await new Promise((resolve) => w.child.once('exit', resolve));
    }
  }
}

const database = await createBenchDatabase();
const prefix = `bench-console-${randomBytes(4).toString('hex')}`;
const hash = await hashConsolePassword('bench-operator-pass', { N: 2 ** 14, r: 8, p: 1 });
const config = loadConfig({ ...process.env, DATABASE_URL: database.url, TRAINSYNC_QUEUE_PREFIX: prefix, TRAINSYNC_CONSOLE_USERS: `bench:operator:${hash}`, TRAINSYNC_CONSOLE_PORT: '0', TRAINSYNC_METRICS_PORT: '0' });
const log = createLogger('warn');
const app = await createApp(config, log, { jobs: allJobs, migrate: true, redis: 'persistent' });
try {
  await sql`insert into trainsync.runs (org, resource, mode, started_at, finished_at, status, pages, inserted, updated, unchanged, quarantined)
    select 'default', (array[${sql.join(RESOURCES)}])[1 + i % ${RESOURCES.length}], 'incremental', now() - make_interval(mins => ${RUNS} - i),
           now() - make_interval(mins => ${RUNS} - i) + make_interval(secs => 5 + i % 40), case when i % 50 = 0 then 'failed' else 'succeeded' end,
           10 + i % 30, i % 100, i % 300, 1000 + i % 500, i % 7
      from generate_series(1, ${RUNS}) i`.execute(app.db);
  await sql`insert into trainsync.provisioning_actions (org, action_id, employee_id, email, kind, seq, before, after, status, attempts, updated_at)
    select 'default', 'bench:' || i, 'E' || lpad((i % 20000)::text, 6, '0'), 'person' || (i % 20000) || '@example.com',
           (array['disable','enable','add-to-group','create-user'])[1 + i % 4], 0, '{"active":true}'::jsonb, '{"active":false}'::jsonb,
           case when i % 997 = 0 then 'failed' else 'succeeded' end, 1, now() - make_interval(secs => ${AUDIT_ROWS} - i)
      from generate_series(1, ${AUDIT_ROWS}) i`.execute(app.db);
  await sql`analyze`.execute(app.db);
  const workerEnv = {
    DATABASE_URL: database.url,
    REDIS_URL: config.REDIS_URL,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    // Never called: no job runs in these workers.
    TRAINSYNC_API_URL: 'http://127.0.0.1:9/',
    TRAINSYNC_API_KEY: 'bench-unused-key',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_CONSOLE_PORT: '0',
    TRAINSYNC_CONSOLE_USERS: `bench:operator:${hash}`,
  };
  const workers = await workersSideBySide(workerEnv);
  // The same pair with V8's young generation capped at 4 MB a semi-space (default 16) in both: the
  // burst of pages no longer leaves a 32 MB young generation and uncollected old-space garbage in
  // the console's worker, so the difference is what the console itself keeps (README, "Console").
  const workersSmallYoung = await workersSideBySide(workerEnv, '--max-semi-space-size=4');

  // The bench's own HTTP client (fetch) loads before the first figure, so it is not counted as the console's.
  const dummy = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => dummy.listen(0, '127.0.0.1', resolve));
  for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${(dummy.address() as AddressInfo).port}/`)).text();
  dummy.close();
  const rssBefore = rssMb();
  const heapBefore = heapMb();
  const server = (await startConsole({ config, db: app.db, withPgClient: app.withPgClient, queue: app.queue, log, health: async () => ({}), repair: (org) => provisionDeps(app, org) }))!;
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
  process.stdout.write(`${JSON.stringify({ runs: RUNS, auditRows: AUDIT_ROWS, samples: SAMPLES, timings, rssBeforeMb: rssBefore, rssStartedMb: rssStarted, rssAfterMb: rssAfter, rssOverheadMb: rssAfter - rssBefore, heapBeforeMb: heapBefore, heapAfterMb: heapAfter, breakdownAfter: breakdown, workers, workersSmallYoung })}\n`);
} finally {
  await app.close();
  await database.drop();
}
