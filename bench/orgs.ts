/**
 * Several organisations on one deployment (issue 20): a simulator (child process) serving
 * 20 organisations, one key each, 50 ms latency; trainsync configured by an orgs file
 * (TRAINSYNC_ORGS_FILE, a budget of 10 requests/s per key), two `trainsync worker`
 * processes, and `trainsync sync results --org …` as a user runs it. Each organisation's
 * time is from spawning the sync to the moment all its results are in training.results
 * (polled: `select org, count(*) … group by org`; `org` holds the slug).
 *
 * A. One organisation alone (T1), then all 20 at once: target all loaded within 1.2 × T1,
 *    and no key over its budget in any second (the simulator's per-key arrivals).
 * B. The same with org01 holding 200,000 results and backfilling first: the other 19,
 *    synced while it runs, each within 1.5 × its alone time (org02 alone, measured first
 *    on the same simulator; the 19 are the same size).
 * Both print the CPU per result and the peak RSS (VmHWM) of each worker.
 *
 * Run: node bin/run-ts.js bench/orgs.ts                        (about ten minutes)
 *      node bin/run-ts.js bench/orgs.ts '{"orgs":3,"results":1000,"backfillResults":20000}'   (a quick look)
 *      node bin/run-ts.js bench/orgs.ts '{"simulatorOnly":true}'   (the 20-organisation simulator alone: every key answers)
 * Prints one JSON line with the figures last.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { budgetIdentity } from '../src/platform/client.ts';
import { budgetKeys } from '../src/platform/request-budget.ts';
import { clusterSafePrefix } from '../src/lib/redis-target.ts';
import type { OrganisationOptions } from '../src/simulator/index.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { createBenchDatabase } from './admin-query.ts';
import { startArrivalCapture, watchConnections, type ArrivalCapture } from './arrivals-capture.ts';
import { comparePerKey, describeComparison, watchGrants, type Arrival, type PerKeyComparison } from './arrivals-per-key.ts';
import { startSimulatorChild } from './simulator-child.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const argsSchema = z
  .object({
    orgs: z.number().int().min(2).max(99).default(20),
    results: z.number().int().positive().default(10_000),
    backfillResults: z.number().int().positive().default(200_000),
    users: z.number().int().positive().default(500),
    latencyMs: z.number().int().min(0).default(50),
    /** Requests per second per key, in the orgs file. */
    budget: z.number().positive().default(10),
    workers: z.number().int().min(1).max(8).default(2),
    scenarios: z.array(z.enum(['A', 'B'])).default(['A', 'B']),
    /** Shared course GUIDs and a user in org01 and org02, as on the platform. */
    overlap: z.boolean().default(true),
    /** Per measured run: give up on the organisations not loaded by then. */
    timeoutSeconds: z.number().positive().default(900),
    /** Start the simulator, check that every key answers with its own organisation, and stop. */
    simulatorOnly: z.boolean().default(false),
    /**
     * Per-key arrivals also by the kernel's capture time on loopback (tcpdump or dumpcap,
     * root) and by the Redis grant log: 'auto' when a capture tool can start, 'on' fails
     * without one, 'off' keeps the simulator's stamps alone.
     */
    capture: z.enum(['auto', 'on', 'off']).default('auto'),
  })
  .strict();
type Args = z.infer<typeof argsSchema>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 0): number => Number(value.toFixed(digits));
const say = (line: string): void => void process.stdout.write(`${line}\n`);

const slugOf = (i: number): string => `org${String(i + 1).padStart(2, '0')}`;
const keyVariable = (slug: string): string => `${slug.toUpperCase()}_API_KEY`;

interface BenchOrg {
  slug: string;
  name: string;
  apiKey: string;
}

function makeOrgs(n: number): BenchOrg[] {
  return Array.from({ length: n }, (_, i) => ({ slug: slugOf(i), name: `Org ${String(i + 1).padStart(2, '0')}`, apiKey: `bench-${slugOf(i)}-${randomBytes(8).toString('hex')}` }));
}

/** The orgs file in the shape trainsync reads (TRAINSYNC_ORGS_FILE): keys by reference only. */
function orgsFile(orgs: readonly BenchOrg[], apiUrl: string, budget: number): string {
  return `${JSON.stringify(
    { organisations: orgs.map((o) => ({ slug: o.slug, name: o.name, apiUrl, apiKey: { env: keyVariable(o.slug) }, requestsPerSecond: budget })) },
    null,
    2,
  )}\n`;
}

// ---- processes ---------------------------------------------------------------------

const CLK_TCK = 100;

/** User + system CPU of a process so far, in ms (/proc/<pid>/stat, every thread). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** Peak resident set of a process so far (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? round(Number(match[1]) / 1024) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export interface Proc {
  child: ChildProcess;
  /** The tail of its stdout and stderr. */
  output(): string;
  exited: Promise<number | string>;
}

/** `trainsync <args>` as a user runs it (bin/trainsync.js: the build in dist/). */
export function trainsync(args: readonly string[], env: Record<string, string>, onOutput?: (text: string) => void): Proc {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const onData = (chunk: Buffer): void => {
    const s = chunk.toString('utf8');
    text = (text + s).slice(-20_000);
    onOutput?.(s);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { child, output: () => text, exited };
}

export async function startWorker(env: Record<string, string>): Promise<Proc> {
  let started = false;
  const proc = trainsync(['worker', '--no-schedules'], env, (s) => {
    if (s.includes('worker started')) started = true;
  });
  for (let waited = 0; !started; waited += 100) {
    if (proc.child.exitCode !== null || waited > 60_000) throw new Error(`a worker did not start:\n${proc.output()}`);
    await sleep(100);
  }
  return proc;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
export async function stop(proc: Proc, graceMs = 40_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  await proc.exited;
  clearTimeout(timer);
}

// ---- the simulator ---------------------------------------------------------------------

const orgSummarySchema = z.object({ organisations: z.array(z.object({ organisationId: z.string(), name: z.string(), results: z.number(), undatedResults: z.number() })) });
const perKeySchema = z.object({
  windowMs: z.number(),
  organisations: z.array(z.object({ id: z.string(), name: z.string(), total: z.number(), maxInAnyWindow: z.number(), maxInAnyClockSecond: z.number() })),
});

interface Simulator {
  url: string;
  orgs: BenchOrg[];
  /** Results each organisation lists (dated and undated): what a full load writes. */
  expected: Record<string, number>;
  stop(): void;
}

async function startBenchSimulator(args: Args, resultsOf: (slug: string) => number): Promise<Simulator> {
  const orgs = makeOrgs(args.orgs);
  const organisations: OrganisationOptions[] = orgs.map((o, i) => ({ apiKey: o.apiKey, name: o.slug, seed: 100 + i, sizes: { results: resultsOf(o.slug), users: args.users } }));
  const sim = await startSimulatorChild({ organisations, overlap: args.overlap, faults: { latencyMs: args.latencyMs } });
  const summary = orgSummarySchema.parse(await (await fetch(`${sim.url}/__simulator/organisations`)).json());
  const expected = Object.fromEntries(summary.organisations.map((o) => [o.name, o.results + o.undatedResults]));
  return { url: sim.url, orgs, expected, stop: sim.stop };
}

async function perKey(url: string): Promise<z.infer<typeof perKeySchema>> {
  return perKeySchema.parse(await (await fetch(`${url}/__simulator/requests/organisations`)).json());
}

/** Every key answers with its own organisation's results; a key of none answers 401. */
async function checkKeys(sim: Simulator): Promise<void> {
  const seen = new Set<string>();
  for (const o of sim.orgs) {
    const res = await fetch(`${sim.url}/api/v2/results?page=1`, { headers: { authorization: `Bearer ${o.apiKey}` } });
    if (res.status !== 200) throw new Error(`${o.slug}: HTTP ${res.status}`);
    const page = z.object({ totalEntities: z.number(), entities: z.array(z.object({ id: z.string() })) }).parse(await res.json());
    if (page.totalEntities !== sim.expected[o.slug]) throw new Error(`${o.slug}: ${page.totalEntities} results listed, ${sim.expected[o.slug]} expected`);
    seen.add(page.entities[0]!.id);
  }
  if (seen.size !== sim.orgs.length) throw new Error('two keys listed the same first result: the data is not scoped per key');
  const wrong = await fetch(`${sim.url}/api/v2/results`, { headers: { authorization: 'Bearer not-a-key' } });
  if (wrong.status !== 401) throw new Error(`a wrong key got HTTP ${wrong.status}`);
}

// ---- one measured run ---------------------------------------------------------------------

interface RunSpec {
  label: string;
  /** `--org` values of the timed sync ('all' or slugs). */
  sync: string[];
  /** The organisations whose load is timed. */
  watch: string[];
  /** An organisation whose backfill starts first and runs under the timed sync. */
  backfill?: string;
}

interface RunFigures {
  label: string;
  /** Spawn of the sync to all of the organisation's results in the warehouse; null when not loaded in time. */
  seconds: Record<string, number | null>;
  /** The slowest watched organisation. */
  totalSeconds: number | null;
  syncExit: number | string | null;
  rowsLoaded: number;
  workers: Array<{ cpuMs: number; peakRssMb: number }>;
  cpuMicrosPerResult: number;
  /**
   * Per key: the most requests in any sliding second and in any clock second, by the
   * kernel's capture time when the run was captured (`perKeyTimes`), else by the
   * simulator's stamp. The stamp can be late when the simulator's event loop is busy
   * (measured: up to 0.9 s, docs/benchmarks.md), which alone made sliding seconds of 11.
   */
  maxPerKeyInAnySecond: number;
  maxPerKeyInAnyClockSecond: number;
  worstKey: string | null;
  perKeyTimes: 'capture' | 'simulator stamp';
  /** The same by the simulator's stamp (its request log), always. */
  maxPerKeyBySimulatorStamp: number;
  requests: number;
  backfillRowsAtEnd?: number;
  /** Per key by simulator stamp, capture time and grant time (see bench/arrivals-per-key.ts). */
  arrivals: PerKeyComparison;
  /** Why there are no capture figures, when there are none. */
  captureUnavailable?: string;
}

const arrivalsSchema = z.array(z.object({ at: z.number(), route: z.string(), query: z.string().default(''), organisationId: z.string().optional() }));

/** The capture and the grant watch of one measured run; both optional. */
async function startWatching(
  sim: Simulator,
  args: Args,
  prefix: string,
): Promise<{ capture: ArrivalCapture | undefined; unavailable: string | undefined; grants: ReturnType<typeof watchGrants>; connections?: ReturnType<typeof watchConnections> }> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const origin = new URL(sim.url).origin;
  const keys = new Map(sim.orgs.map((o) => [budgetKeys(clusterSafePrefix(prefix, redisUrl), budgetIdentity(origin, o.apiKey)).log, o.slug]));
  const grants = watchGrants(redisUrl, keys);
  if (args.capture === 'off') return { capture: undefined, unavailable: 'capture off', grants };
  const started = await startArrivalCapture(Number(new URL(sim.url).port));
  if ('unavailable' in started) {
    if (args.capture === 'on') throw new Error(`capture: ${started.unavailable}`);
    return { capture: undefined, unavailable: started.unavailable, grants };
  }
  return { capture: started, unavailable: undefined, grants, connections: watchConnections(Number(new URL(sim.url).port)) };
}

async function stopWatching(sim: Simulator, args: Args, watching: Awaited<ReturnType<typeof startWatching>>): Promise<{ arrivals: PerKeyComparison; captureUnavailable?: string }> {
  const captured = watching.capture ? await watching.capture.stop() : undefined;
  const owners = watching.connections?.stop() ?? new Map<number, number>();
  const grants = await watching.grants.stop();
  const slugOfId = new Map((await perKey(sim.url)).organisations.map((o) => [o.id, o.name]));
  const slugOfKey = new Map(sim.orgs.map((o) => [`Bearer ${o.apiKey}`, o.slug]));
  const simulator: Arrival[] = [];
  for (const a of arrivalsSchema.parse(await (await fetch(`${sim.url}/__simulator/requests/arrivals`)).json())) {
    const key = a.organisationId === undefined ? undefined : slugOfId.get(a.organisationId);
    if (key === undefined) continue;
    const space = a.route.indexOf(' ');
    simulator.push({ key, at: a.at, method: a.route.slice(0, space), target: a.query === '' ? a.route.slice(space + 1) : `${a.route.slice(space + 1)}?${a.query}` });
  }
  const capturedArrivals = captured?.requests.flatMap((r) => {
    const key = r.authorization === undefined ? undefined : slugOfKey.get(r.authorization);
    const pid = owners.get(r.srcPort);
    return key === undefined ? [] : [{ key, at: r.at, method: r.method, target: r.target, firstOnConnection: r.firstOnConnection, ...(pid === undefined ? {} : { pid }) }];
  });
  const arrivals = comparePerKey({ budget: args.budget, simulator, grants, ...(capturedArrivals ? { captured: capturedArrivals } : {}) });
  if (captured && (captured.streamGaps > 0 || (captured.dropped ?? 0) > 0)) say(`   capture: ${captured.streamGaps} stream gaps, ${captured.dropped} packets dropped by the kernel`);
  return { arrivals, ...(watching.unavailable === undefined ? {} : { captureUnavailable: watching.unavailable }) };
}

async function counts(db: pg.Client): Promise<Record<string, number>> {
  try {
    const { rows } = await db.query<{ org: string; n: number }>('select org, count(*)::int as n from training.results group by org');
    return Object.fromEntries(rows.map((r) => [r.org, r.n]));
  } catch (error) {
    throw new Error(`counting training.results by org failed (has the multi-organisation warehouse landed?): ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function measure(sim: Simulator, file: string, args: Args, spec: RunSpec): Promise<RunFigures> {
  const database = await createBenchDatabase();
  const prefix = `bench-orgs-${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    TRAINSYNC_ORGS_FILE: file,
    ...Object.fromEntries(sim.orgs.map((o) => [keyVariable(o.slug), o.apiKey])),
    DATABASE_URL: database.url,
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
  const workers: Proc[] = [];
  const syncs: Proc[] = [];
  const db = new pg.Client({ connectionString: database.url });
  let watching: Awaited<ReturnType<typeof startWatching>> | undefined;
  try {
    const migrate = trainsync(['migrate'], env);
    const migrated = await migrate.exited;
    if (migrated !== 0) throw new Error(`trainsync migrate exited with ${migrated}:\n${migrate.output()}`);
    await db.connect();
    for (let i = 0; i < args.workers; i += 1) workers.push(await startWorker(env));
    await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
    watching = await startWatching(sim, args, prefix);

    if (spec.backfill !== undefined) {
      syncs.push(trainsync(['sync', 'results', '--org', spec.backfill], env));
      // The backfill is under way (rows arriving) before the others start.
      for (let waited = 0; ((await counts(db))[spec.backfill] ?? 0) === 0; waited += 200) {
        if (syncs[0]!.child.exitCode !== null || waited > 120_000) throw new Error(`the backfill of ${spec.backfill} did not start:\n${syncs[0]!.output()}`);
        await sleep(200);
      }
    }

    const before = await counts(db);
    const cpu0 = workers.map((w) => cpuMs(w.child.pid!));
    const t0 = performance.now();
    const timed = trainsync(['sync', 'results', ...spec.sync.flatMap((org) => ['--org', org])], env);
    syncs.push(timed);
    if (watching.connections) say(`   pids: workers ${workers.map((w) => w.child.pid).join(', ')}; syncs ${syncs.map((p) => p.child.pid).join(', ')}`);
    const seconds: Record<string, number | null> = Object.fromEntries(spec.watch.map((slug) => [slug, null]));
    const deadline = t0 + args.timeoutSeconds * 1000;
    let latest = before;
    for (let exitedPolls = 0; ; ) {
      latest = await counts(db);
      const elapsed = (performance.now() - t0) / 1000;
      for (const slug of spec.watch) {
        if (seconds[slug] === null && (latest[slug] ?? 0) >= sim.expected[slug]!) seconds[slug] = round(elapsed, 2);
      }
      if (spec.watch.every((slug) => seconds[slug] !== null)) break;
      if (performance.now() > deadline) break;
      // The sync ended without loading everything: a few more looks for the last commits, then stop.
      if (timed.child.exitCode !== null && ++exitedPolls > 10) break;
      await sleep(200);
    }
    const cpu = workers.map((w, i) => cpuMs(w.child.pid!) - cpu0[i]!);
    const arrivals = await stopWatching(sim, args, watching);
    const rowsLoaded = Object.entries(latest).reduce((sum, [slug, n]) => sum + n - (before[slug] ?? 0), 0);
    const keys = await perKey(sim.url);
    const worst = keys.organisations.reduce<(typeof keys.organisations)[number] | undefined>((w, o) => (w === undefined || o.maxInAnyWindow > w.maxInAnyWindow ? o : w), undefined);
    const captured = arrivals.arrivals.capture;
    const done = Object.values(seconds);
    const figures: RunFigures = {
      label: spec.label,
      seconds,
      totalSeconds: done.some((s) => s === null) ? null : Math.max(...(done as number[])),
      syncExit: timed.child.exitCode,
      rowsLoaded,
      workers: workers.map((w, i) => ({ cpuMs: Math.round(cpu[i]!), peakRssMb: peakRssMb(w.child.pid!) })),
      cpuMicrosPerResult: rowsLoaded > 0 ? round((cpu.reduce((a, b) => a + b, 0) * 1000) / rowsLoaded, 1) : Number.NaN,
      maxPerKeyInAnySecond: captured?.maxPerKey ?? worst?.maxInAnyWindow ?? 0,
      maxPerKeyInAnyClockSecond: captured?.maxPerKeyInClockSecond ?? Math.max(0, ...keys.organisations.map((o) => o.maxInAnyClockSecond)),
      worstKey: captured ? captured.worstKey : (worst?.name ?? null),
      perKeyTimes: captured ? 'capture' : 'simulator stamp',
      maxPerKeyBySimulatorStamp: worst?.maxInAnyWindow ?? 0,
      requests: keys.organisations.reduce((sum, o) => sum + o.total, 0),
      ...(spec.backfill === undefined ? {} : { backfillRowsAtEnd: latest[spec.backfill] ?? 0 }),
      ...arrivals,
    };
    if (figures.totalSeconds === null) {
      say(`   ${spec.label}: not every organisation loaded (sync exit ${figures.syncExit}); the sync's output ends:\n${timed.output().slice(-3000)}`);
    }
    return figures;
  } finally {
    // A run that failed: the capture process and the Redis poller must not outlive it (a no-op when read already).
    await watching?.capture?.stop().catch(() => undefined);
    await watching?.grants.stop();
    watching?.connections?.stop();
    // Waiting syncs go first (a sync stopped by Ctrl-C leaves its jobs to the workers), then the workers.
    for (const s of syncs) await stop(s, 10_000, 'SIGINT');
    await Promise.all(workers.map((w) => stop(w)));
    await db.end().catch(() => undefined);
    await database.drop();
    await deleteBenchKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix);
  }
}

function describeRun(f: RunFigures): string {
  const times = Object.entries(f.seconds).map(([slug, s]) => `${slug} ${s ?? '—'}`);
  const shown = times.length > 6 ? [...times.slice(0, 3), '…', ...times.slice(-2)] : times;
  return (
    `   ${f.label}: ${shown.join(', ')} s; slowest ${f.totalSeconds ?? 'not loaded'} s; ${f.rowsLoaded} rows, ${f.requests} requests, ` +
    `at most ${f.maxPerKeyInAnySecond} per key in any sliding second by ${f.perKeyTimes} (${f.worstKey}), ${f.maxPerKeyInAnyClockSecond} in any clock second` +
    `${f.perKeyTimes === 'capture' ? ` (simulator stamp: ${f.maxPerKeyBySimulatorStamp})` : ''}; ` +
    `workers CPU ${f.workers.map((w) => `${w.cpuMs} ms`).join(' + ')} = ${f.cpuMicrosPerResult} µs per result; peak RSS ${f.workers.map((w) => `${w.peakRssMb} MB`).join(', ')}\n` +
    `      per key: ${describeComparison(f.arrivals)}${f.captureUnavailable === undefined ? '' : ` (no capture: ${f.captureUnavailable})`}`
  );
}

// ---- scenarios ---------------------------------------------------------------------

export interface OrgsBench {
  orgs: number;
  results: number;
  budget: number;
  latencyMs: number;
  workers: number;
  a?: { alone: RunFigures; all: RunFigures; ratio: number | null; target: number };
  b?: { alone: RunFigures; withBackfill: RunFigures; backfill: string; backfillResults: number; worstRatio: number | null; worstOrg: string | null; target: number };
}

async function withSimulator<T>(args: Args, resultsOf: (slug: string) => number, body: (sim: Simulator, file: string) => Promise<T>): Promise<T> {
  const sim = await startBenchSimulator(args, resultsOf);
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-bench-orgs-'));
  try {
    await checkKeys(sim);
    const file = path.join(dir, 'orgs.json');
    await writeFile(file, orgsFile(sim.orgs, sim.url, args.budget));
    return await body(sim, file);
  } finally {
    sim.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchOrgs(input: z.input<typeof argsSchema> = {}): Promise<OrgsBench> {
  const args = argsSchema.parse(input);
  const out: OrgsBench = { orgs: args.orgs, results: args.results, budget: args.budget, latencyMs: args.latencyMs, workers: args.workers };
  const all = Array.from({ length: args.orgs }, (_, i) => slugOf(i));

  if (args.simulatorOnly) {
    await withSimulator(args, () => args.results, async (sim, file) => {
      const keys = await perKey(sim.url);
      say(`   ${sim.orgs.length} organisations at ${sim.url}, ${Object.values(sim.expected).join('/')} results; every key answers with its own; requests so far per key: ${keys.organisations.map((o) => o.total).join(', ')}`);
      say(`   orgs file:\n${readFileSync(file, 'utf8')}`);
    });
    return out;
  }

  if (args.scenarios.includes('A')) {
    say(`\nA. ${args.orgs} organisations of ${args.results} results, ${args.latencyMs} ms latency, ${args.budget} requests/s per key, ${args.workers} workers`);
    out.a = await withSimulator(args, () => args.results, async (sim, file) => {
      const alone = await measure(sim, file, args, { label: 'org01 alone', sync: ['org01'], watch: ['org01'] });
      say(describeRun(alone));
      const together = await measure(sim, file, args, { label: `all ${args.orgs}`, sync: ['all'], watch: all });
      say(describeRun(together));
      const t1 = alone.seconds.org01 ?? null;
      return { alone, all: together, ratio: t1 === null || together.totalSeconds === null ? null : round(together.totalSeconds / t1, 2), target: 1.2 };
    });
  }

  if (args.scenarios.includes('B')) {
    const backfill = 'org01';
    const others = all.filter((slug) => slug !== backfill);
    say(`\nB. the same with ${backfill} backfilling ${args.backfillResults} results while the other ${others.length} load`);
    out.b = await withSimulator(args, (slug) => (slug === backfill ? args.backfillResults : args.results), async (sim, file) => {
      const alone = await measure(sim, file, args, { label: 'org02 alone', sync: ['org02'], watch: ['org02'] });
      say(describeRun(alone));
      const withBackfill = await measure(sim, file, args, { label: `${others.length} beside the backfill`, sync: others, watch: others, backfill });
      say(describeRun(withBackfill));
      say(`   ${backfill} had ${withBackfill.backfillRowsAtEnd} of ${sim.expected[backfill]} rows when the others were loaded`);
      const t1 = alone.seconds.org02 ?? null;
      let worstRatio: number | null = null;
      let worstOrg: string | null = null;
      for (const slug of others) {
        const s = withBackfill.seconds[slug];
        const ratio = t1 === null || s === null || s === undefined ? Number.POSITIVE_INFINITY : s / t1;
        if (worstRatio === null || ratio > worstRatio) {
          worstRatio = ratio;
          worstOrg = slug;
        }
      }
      return { alone, withBackfill, backfill, backfillResults: args.backfillResults, worstRatio: worstRatio === null || !Number.isFinite(worstRatio) ? null : round(worstRatio, 2), worstOrg, target: 1.5 };
    });
  }
  return out;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchOrgs(JSON.parse(process.argv[2] ?? '{}') as z.input<typeof argsSchema>);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
