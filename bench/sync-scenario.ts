/**
 * One results-sync scenario in a process of its own (so its peak RSS is its own):
 * a simulator child process, a fresh database, `sync results` through the real queue
 * path, then (optionally) a second run with part of the data changed, and the raw
 * COPY rate of the same rows into identical plain tables of the same database.
 *
 *   node bin/run-ts.js bench/sync-scenario.ts '{"results":200000,"changeFraction":0.1,"copy":true}'
 *
 * Prints one JSON line with the figures.
 */
import { warmResults as warmPages } from './warm-results.ts';
import { scopedApp } from '../src/commands/options/scoped.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { createApp } from '../src/runtime/app.ts';
import { loadHttpClient } from '../src/platform/http.ts';
import { budgetIdentity } from '../src/platform/client.ts';
import { budgetKeys } from '../src/platform/request-budget.ts';
import { clusterSafePrefix } from '../src/lib/redis-target.ts';
import { maxInSlidingWindow, watchGrants } from './arrivals-per-key.ts';
import { judgePerKeyBudget } from './budget-verdict.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runSync } from '../src/sync/run-and-wait.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { adminQuery } from './admin-query.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { BackendCpuSampler, processCpuMicros, simulatorPid } from './sync-proc-cpu.ts';

const argsSchema = z.object({
  results: z.number().int().positive(),
  latencyMs: z.number().int().min(0).default(0),
  requestsPerSecond: z.number().positive().default(10_000),
  changeFraction: z.number().min(0).max(1).default(0),
  copy: z.boolean().default(false),
  mode: z.enum(['full', 'windows']).default('full'),
  batchRows: z.number().int().positive().optional(),
  writers: z.number().int().positive().optional(),
  /** TRAINSYNC_RESULTS_WALK_WINDOW_PAGES (a value above the list's pages walks it whole). */
  walkWindowPages: z.number().int().positive().optional(),
  /** TRAINSYNC_RESULTS_CONCURRENCY. */
  resultsConcurrency: z.number().int().positive().optional(),
  /** Run the careful peer (bench/careful-peer.ts) after each of trainsync's loads. */
  peer: z.boolean().default(false),
  /**
   * Read every results page once before the timed loads. The simulator serialises each
   * result on its first serve and keeps the text (about half its CPU per page, on the same
   * cores as the load); without this, the first of the readers pays that and the careful
   * peer, which reads after trainsync, never does.
   */
  warmSimulator: z.boolean().default(true),
  /**
   * Traces on (bench/sync-tracing.ts): spans go to this OTLP/HTTP traces URL, sent every
   * 200 ms so that nearly all of the run's are sent within the run it measures. Unset: off,
   * as by default (no OTEL_* variable at all).
   */
  tracing: z.object({ url: z.string(), protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf') }).optional(),
});
const args = argsSchema.parse(JSON.parse(process.argv[2] ?? '{}'));

const ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `trainsync_bench_${randomBytes(4).toString('hex')}`;
const databaseUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;

/** Raw COPY of the loaded rows into identical plain tables: the ceiling the upsert is compared with. */
async function rawCopyRate(pool: pg.Pool): Promise<{ rate: number; postgresMicros: number | undefined }> {
  const client = await pool.connect();
  const backend = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  try {
    await client.query('create table bench_results (like training.results including all)');
    await client.query('create table bench_answers (like training.result_filter_answers including all)');
    const dump = async (sql: string): Promise<Buffer[]> => {
      const chunks: Buffer[] = [];
      await pipeline(client.query(copyTo(`copy (${sql}) to stdout`)), new Writable({ write(chunk: Buffer, _e, cb) { chunks.push(chunk); cb(); } }));
      return chunks;
    };
    const results = await dump('select * from training.results');
    const answers = await dump('select * from training.result_filter_answers');
    const started = performance.now();
    const cpu0 = processCpuMicros(backend);
    await client.query('begin');
    const load = async (table: string, chunks: Buffer[]): Promise<void> => {
      const stream = client.query(copyFrom(`copy ${table} from stdin`));
      for (const chunk of chunks) if (!stream.write(chunk)) await new Promise((r) => stream.once('drain', r));
      await new Promise<void>((resolve, reject) => {
        stream.once('finish', resolve);
        stream.once('error', reject);
        stream.end();
      });
    };
    await load('bench_results', results);
    await load('bench_answers', answers);
    await client.query('commit');
    const seconds = (performance.now() - started) / 1000;
    const cpu1 = processCpuMicros(backend);
    return { rate: args.results / seconds, postgresMicros: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
  } finally {
    client.release();
  }
}

const peerSchema = z.object({ seconds: z.number(), written: z.number(), cpuMicrosPerResult: z.number() });

/** The careful peer's load, in a process of its own (its memory and CPU are not ours). */
function runPeer(url: string, apiKey: string): Promise<z.infer<typeof peerSchema>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/run-ts.js', 'bench/careful-peer.ts', JSON.stringify({ url, apiKey, databaseUrl })], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('exit', (code) => (code === 0 ? resolve(peerSchema.parse(JSON.parse(out.trim()))) : reject(new Error(`careful peer exited with ${code}`))));
  });
}

/** User + system CPU of the run divided by the results it read. */
function microsPerResult(cpu: NodeJS.CpuUsage): number {
  return Number(((cpu.user + cpu.system) / args.results).toFixed(1));
}

/**
 * Every results page once, 4 at a time (see `warmSimulator`), in a process of its own so
 * the peak RSS figure stays the sync's.
 */
function warmResults(url: string, apiKey: string): Promise<void> {
  return warmPages(url, apiKey, Math.ceil(args.results / 50) + 1);
}

const prefix = `bench-${randomBytes(4).toString('hex')}`;
const sim = await startSimulatorChild({ seed: 42, sizes: { results: args.results, users: 2_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: args.latencyMs } });
try {
  const config = loadConfig({
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: databaseUrl,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: String(args.requestsPerSecond),
    TRAINSYNC_RESULTS_WINDOW_DAYS: '31',
    ...(args.batchRows ? { TRAINSYNC_BATCH_ROWS: String(args.batchRows) } : {}),
    ...(args.writers ? { TRAINSYNC_RESULTS_WRITERS: String(args.writers) } : {}),
    ...(args.walkWindowPages ? { TRAINSYNC_RESULTS_WALK_WINDOW_PAGES: String(args.walkWindowPages) } : {}),
    ...(args.resultsConcurrency ? { TRAINSYNC_RESULTS_CONCURRENCY: String(args.resultsConcurrency) } : {}),
    TRAINSYNC_METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
    ...(args.tracing
      ? { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: args.tracing.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: args.tracing.protocol, OTEL_BSP_SCHEDULE_DELAY: '200' }
      : {}),
  });
  const log = createLogger(config.LOG_LEVEL);
  // As `trainsync sync` and the worker do as they start (a process's one-time load, off the run's clock).
  loadHttpClient().catch(() => undefined);
  const app = await createApp(config, log, { jobs: allJobs, migrate: true });
  const rssBeforeMb = Math.round(process.memoryUsage().rss / 1024 / 1024);
  const payload = syncPayloadSchema.parse(args.mode === 'full' ? { trigger: 'cli', full: true } : { trigger: 'cli', since: '2024-01-01', until: '2024-12-31' });
  if (args.warmSimulator) await warmResults(sim.url, sim.apiKey);
  await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
  // The other processes on the same cores: the simulator and this database's backends.
  const simPid = simulatorPid();
  const adminPool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  // An idle client's server may go (another session's maintenance ends backends): not a crash of the bench.
  adminPool.on('error', () => undefined);
  const others = async <T>(work: () => Promise<T>): Promise<{ value: T; simulatorMicros: number | undefined; postgresMicros: number }> => {
    const sampler = new BackendCpuSampler(adminPool, dbName);
    await sampler.start();
    const sim0 = simPid === undefined ? undefined : processCpuMicros(simPid);
    const value = await work();
    const sim1 = simPid === undefined ? undefined : processCpuMicros(simPid);
    return { value, simulatorMicros: sim0 === undefined || sim1 === undefined ? undefined : sim1 - sim0, postgresMicros: await sampler.stop() };
  };
  const perResult = (micros: number | undefined): number | null => (micros === undefined ? null : Number((micros / args.results).toFixed(1)));
  // CPU of this whole process (every thread) over the run alone: start-up, migrations
  // and the simulator's process are outside it.
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const mono0 = process.hrtime.bigint();
  // The run's span on the wall clock the simulator stamps requests with (its timeOrigin + now):
  // start-up before its first request and the end after its last, against the requests' own span.
  const wall0 = performance.timeOrigin + t0;
  // The budget's grants of the run (Redis clock), beside the simulator's stamps, which run late
  // in clumps on a busy machine (docs/benchmarks.md): the verdict takes the grants when complete.
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const grantLog = budgetKeys(clusterSafePrefix(config.TRAINSYNC_QUEUE_PREFIX, redisUrl), budgetIdentity(new URL(sim.url).origin, sim.apiKey)).log;
  const grantWatch = watchGrants(redisUrl, new Map([[grantLog, DEFAULT_ORG]]));
  let grants: number[] = [];
  const firstRun = await others(() => runSync(scopedApp(app, DEFAULT_ORG), ['results'], payload)).finally(() =>
    grantWatch.stop().then((seen) => {
      grants = seen.get(DEFAULT_ORG) ?? [];
    }),
  );
  const [first] = firstRun.value;
  const firstSeconds = (performance.now() - t0) / 1000;
  const wall1 = performance.timeOrigin + performance.now();
  const firstCpu = process.cpuUsage(cpu0);
  // The run's span on the monotonic clock `node --cpu-prof` stamps samples with (µs).
  const firstLoadSpanUs = [Number(mono0 / 1000n), Number(process.hrtime.bigint() / 1000n)];
  if (first?.status !== 'completed') throw new Error(`sync failed: ${first?.error}`);
  const summary = (await (await fetch(`${sim.url}/__simulator/requests/summary`)).json()) as { total?: number; maxInAnyWindow?: number };
  const figures: Record<string, unknown> = {
    results: args.results,
    tracing: config.tracing !== undefined,
    // Whether anything of OpenTelemetry registered itself in this process (its API keeps a global): never while off.
    openTelemetryRegistered: Symbol.for('opentelemetry.js.api.1') in globalThis,
    latencyMs: args.latencyMs,
    requestsPerSecond: args.requestsPerSecond,
    mode: args.mode,
    warmSimulator: args.warmSimulator,
    firstLoadSeconds: Number(firstSeconds.toFixed(2)),
    firstLoadResultsPerSecond: Math.round(args.results / firstSeconds),
    firstLoadCpuMicrosPerResult: microsPerResult(firstCpu),
    firstLoadSpanUs,
    firstLoadWallMs: [Number(wall0.toFixed(1)), Number(wall1.toFixed(1))],
    firstLoadCpu: { userMs: Math.round(firstCpu.user / 1000), systemMs: Math.round(firstCpu.system / 1000) },
    // Not the sync's CPU: the simulator serving the pages and Postgres writing them, on the same cores.
    firstLoadSimulatorCpuMicrosPerResult: perResult(firstRun.simulatorMicros),
    firstLoadPostgresCpuMicrosPerResult: perResult(firstRun.postgresMicros),
    firstLoad: first.result,
    requests: summary,
    // Judged by the grant log when it holds every request, else by the simulator's stamps.
    budgetVerdict: (({ pass, maxPerKey, keysByGrants, maxByStamp, grantsSeen, requests }) => ({ pass, maxPerKey, by: keysByGrants > 0 ? 'grants' : 'stamp', maxByStamp, grantsSeen, requests, maxGrantsInAnySecond: maxInSlidingWindow(grants) }))(
      judgePerKeyBudget(args.requestsPerSecond, new Map([[DEFAULT_ORG, { requests: summary.total ?? 0, maxByStamp: summary.maxInAnyWindow ?? 0, grants }]])),
    ),
  };
  const peerRate = (peer: z.infer<typeof peerSchema>): number => Math.round(args.results / peer.seconds);
  if (args.peer) {
    const peer = await runPeer(sim.url, sim.apiKey);
    figures.peerFirstLoad = { ...peer, resultsPerSecond: peerRate(peer) };
  }
  if (args.changeFraction > 0) {
    const mutated = await (await fetch(`${sim.url}/__simulator/results/mutate`, { method: 'POST', body: JSON.stringify({ fraction: args.changeFraction }) })).json();
    const cpu1 = process.cpuUsage();
    const t1 = performance.now();
    const secondRun = await others(() => runSync(scopedApp(app, DEFAULT_ORG), ['results'], syncPayloadSchema.parse({ trigger: 'cli', full: true })));
    const [second] = secondRun.value;
    const secondSeconds = (performance.now() - t1) / 1000;
    figures.reloadCpuMicrosPerResult = microsPerResult(process.cpuUsage(cpu1));
    figures.reloadSimulatorCpuMicrosPerResult = perResult(secondRun.simulatorMicros);
    figures.reloadPostgresCpuMicrosPerResult = perResult(secondRun.postgresMicros);
    figures.changed = mutated;
    figures.reloadSeconds = Number(secondSeconds.toFixed(2));
    figures.reloadResultsPerSecond = Math.round(args.results / secondSeconds);
    figures.reload = second?.result;
    if (args.peer) {
      const peer = await runPeer(sim.url, sim.apiKey);
      figures.peerReload = { ...peer, resultsPerSecond: peerRate(peer) };
    }
  }
  // Peak RSS of the syncs alone: the raw COPY below holds its rows in memory on purpose.
  figures.peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  figures.rssBeforeSyncMb = rssBeforeMb;
  await app.close();
  await adminPool.end();
  if (args.copy) {
    const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 1 });
    const copied = await rawCopyRate(pool).finally(() => pool.end());
    figures.rawCopyResultsPerSecond = Math.round(copied.rate);
    figures.rawCopyPostgresCpuMicrosPerResult = perResult(copied.postgresMicros);
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} finally {
  sim.stop();
  await adminQuery(ADMIN, `drop database if exists ${dbName} with (force)`);
  await deleteBenchKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix);
}
