/**
 * What the series the alerts read cost a scrape, with 1,000 organisations: each with 30 days of
 * runs of every resource (180,000 runs, some failed or incomplete), a schedule per resource as
 * the worker records it, and a few held plans, SCIM Users waiting and webhook events waiting.
 * The worker's app and health server in this process; /metrics scraped over HTTP 20 times.
 * Prints per scrape: wall time (median, max), this process's CPU (the Postgres reads' client
 * side, the rendering), the body's size and series, and the state read alone. Then
 * training.freshness as a BI reader runs it: trainsync_reader (every organisation) and one
 * organisation's reader, EXPLAIN ANALYZE's execution time.
 *
 * Run: node bin/run-ts.js bench/metrics-scrape.ts                 (1,000 organisations)
 *      node bin/run-ts.js bench/metrics-scrape.ts '{"orgs":200}'
 * Prints one JSON line with the figures last.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createApp } from '../src/runtime/app.ts';
import { startHealthServer } from '../src/runtime/health-server.ts';
import { createLogger } from '../src/runtime/log.ts';
import { stateReader } from '../src/runtime/state-metrics.ts';
import { recordSyncSchedules } from '../src/sync/sync-schedules.ts';
import { createBenchDatabase } from './admin-query.ts';

const args = z.object({ orgs: z.number().int().min(2).max(5_000).default(1_000), days: z.number().int().min(1).default(30), scrapes: z.number().int().min(1).default(20) }).strict().parse(JSON.parse(process.argv[2] ?? '{}'));
const slug = (i: number): string => `c${String(i).padStart(4, '0')}`;
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

const database = await createBenchDatabase();
const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-scrape-bench-'));
const tag = randomBytes(3).toString('hex');
const readerRole = `r${tag}_one`;
const roles = [`bi${tag}_all`, `bi${tag}_one`, readerRole];
const admin = new pg.Client({ connectionString: database.url });
try {
  const file = path.join(dir, 'orgs.json');
  await writeFile(
    file,
    JSON.stringify({ organisations: Array.from({ length: args.orgs }, (_, i) => ({ slug: slug(i + 1), name: `Client ${i + 1}`, apiUrl: 'http://127.0.0.1:9', apiKey: { env: 'ORG_KEY' }, ...(i === 0 ? { reader: readerRole } : {}) })) }),
  );
  const config = loadConfig({ TRAINSYNC_ORGS_FILE: file, ORG_KEY: 'not-used', DATABASE_URL: database.url, TRAINSYNC_QUEUE_PREFIX: `trainsync-scrape-bench-${process.pid}` });
  const app = await createApp(config, createLogger('warn', new Writable({ write: (_c, _e, cb) => cb() })), { jobs: allJobs, migrate: true, redis: 'persistent' });
  await admin.connect();
  await recordSyncSchedules(app.scopes, app.catalog, config);
  await admin.query(
    `insert into trainsync.runs (org, resource, mode, started_at, finished_at, status)
     select 'c' || lpad(i::text, 4, '0'), r, 'incremental', now() - make_interval(days => d, hours => 1), now() - make_interval(days => d), case when d = 0 and i % 20 = 3 then 'failed' when d < 2 and i % 25 = 4 then 'incomplete' else 'succeeded' end
     from generate_series(1, $1::int) i, unnest(array['courses','filters','groups','users','results','seats']) r, generate_series(0, $2::int - 1) d`,
    [args.orgs, args.days],
  );
  await admin.query(
    `insert into trainsync.held_plans (org, source, file, mode, reason, message, actions, people, disables, feed, status, created_at)
     select 'c' || lpad(i::text, 4, '0'), 'reconcile', 'reconcile', 'delta', 'max-disable', 'held', '[]', '[]', 1, '{}', 'held', now() - interval '5 hours'
     from generate_series(1, $1::int) i where i % 40 = 1`,
    [args.orgs],
  );
  await admin.query(
    `insert into trainsync.scim_users (org, scim_id, employee_id, user_name, active, resource, pending, updated_at)
     select 'c' || lpad(i::text, 4, '0'), gen_random_uuid(), 'E' || k, 'u' || k || '@example.com', true, '{}', k = 1, now() - interval '1 hour'
     from generate_series(1, $1::int) i, generate_series(1, 20) k`,
    [args.orgs],
  );
  await admin.query(
    `insert into trainsync.webhook_events (org, event_id, event_type, payload, received_at)
     select 'c' || lpad(i::text, 4, '0'), 'e' || i, 'COURSE_COMPLETE', '{}', now() - interval '2 minutes' from generate_series(1, $1::int) i where i % 10 = 0`,
    [args.orgs],
  );
  await admin.query('analyze');
  const { rows: counted } = await admin.query<{ n: number }>('select count(*)::int as n from trainsync.runs');

  const read = stateReader(app.scopes, app.catalog, config.orgs.map((o) => o.slug));
  await read();
  const readMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await read();
    readMs.push(performance.now() - started);
  }

  const health = await startHealthServer({ port: 0, metrics: app.metrics, log: app.log, checks: {} });
  const wall: number[] = [];
  const cpu: number[] = [];
  let body = '';
  for (let i = 0; i < args.scrapes; i++) {
    const before = process.cpuUsage();
    const started = performance.now();
    body = await (await fetch(`http://127.0.0.1:${health.port}/metrics`)).text();
    wall.push(performance.now() - started);
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  await health.close();
  await app.close();
  const lines = body.split('\n').filter((l) => l.startsWith('trainsync_'));
  const state = lines.filter((l) => /^trainsync_(sync_last|sync_schedule|sync_incomplete|held_|scim_pending|scim_quarantined_(users|oldest)|webhook_backlog)/.test(l));

  // training.freshness as BI readers run it.
  await admin.query(`create role ${roles[0]} login in role trainsync_reader`);
  await admin.query(`create role ${roles[1]} login in role ${readerRole}`);
  const explain = async (login: string): Promise<{ ms: number; rows: number }> => {
    const url = new URL(database.url);
    url.username = login;
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': Array<{ 'Execution Time': number; Plan: { 'Actual Rows': number } }> }>('explain (analyze, format json) select * from training.freshness');
      const plan = rows[0]!['QUERY PLAN'][0]!;
      return { ms: round(plan['Execution Time']), rows: plan.Plan['Actual Rows'] };
    } finally {
      await client.end();
    }
  };
  await explain(roles[0]!);
  const freshnessAll = await explain(roles[0]!);
  const freshnessOne = await explain(roles[1]!);

  const figures = {
    orgs: args.orgs,
    runs: counted[0]!.n,
    scrape: { medianMs: round(median(wall)), maxMs: round(Math.max(...wall)), medianCpuMs: round(median(cpu)), bytes: body.length, series: lines.length, stateSeries: state.length },
    stateReadMedianMs: round(median(readMs)),
    freshness: { allOrganisations: freshnessAll, oneOrganisation: freshnessOne },
  };
  say(`${args.orgs} organisations, ${counted[0]!.n} runs: /metrics ${figures.scrape.medianMs} ms median (max ${figures.scrape.maxMs}), ${figures.scrape.medianCpuMs} ms CPU in this process, ${figures.scrape.series} series (${figures.scrape.stateSeries} state), ${figures.scrape.bytes} bytes; the state read alone ${figures.stateReadMedianMs} ms`);
  say(`training.freshness: every organisation ${freshnessAll.rows} rows in ${freshnessAll.ms} ms; one organisation's reader ${freshnessOne.rows} rows in ${freshnessOne.ms} ms`);
  say(JSON.stringify(figures));
} finally {
  await admin.end().catch(() => undefined);
  await database.drop();
  const cleanup = new pg.Client({ connectionString: (() => { const u = new URL(database.url); u.pathname = '/postgres'; return u.toString(); })() });
  await cleanup.connect();
  for (const role of roles) await cleanup.query(`drop role if exists ${role}`).catch(() => undefined);
  await cleanup.end();
  await rm(dir, { recursive: true, force: true });
}
