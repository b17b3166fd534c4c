/**
 * A night's fixed cost per organisation: 1,000 organisations (a simulator child serving 1,000
 * keys), loaded once by `trainsync sync all --org all` (not measured), then a second night of
 * the same command with no new results on the platform, so every run of it is what a night
 * costs whatever the results: its runs, locks, checkpoints, the snapshots of courses, filters,
 * groups and users, seats, and the results' incremental read that finds nothing new.
 * `workers` `trainsync worker` processes run the jobs (default concurrency and pool), 10
 * requests/s per key.
 *
 * Figures of the second night: the workers' CPU per organisation-night (ms, /proc of the
 * worker processes) and Postgres' (this database's backends, sampled from /proc), beside the
 * `sync` command's, Redis's and the simulator's; the target line says whether the workers'
 * figure is at most `targetWorkerMs` (half of what this bench measured on the code before
 * the change: docs/benchmarks.md, "A night's fixed cost").
 *
 * Run: node bin/run-ts.js bench/orgs-night.ts                 (the full size)
 *      node bin/run-ts.js bench/orgs-night.ts '{"orgs":100}'  (a scaled-down look)
 * WORKER_NODE_OPTIONS gives the workers (only) Node options, e.g. `--perf-basic-prof` for `perf`.
 * PROF_DIR=/tmp/prof writes a V8 CPU profile of every worker when it exits (`--cpu-prof`),
 * and `{"nights":2}` times more nights after the first load (each figure their mean).
 * Prints one JSON line with the figures last.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import type { OrganisationOptions } from '../src/simulator/index.ts';
import { syncResources } from '../src/sync/catalog-resources.ts';
import { orgsDeployment } from './orgs-deployment.ts';
import { cpuMs, peakRssMb, startWorker, stop, trainsync, type Proc } from './orgs.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { BackendCpuSampler, processCpuMicros, redisServerPid, simulatorPid } from './sync-proc-cpu.ts';

const argsSchema = z
  .object({
    orgs: z.number().int().min(2).max(5_000).default(1_000),
    /** Results per organisation, loaded by the first night (not measured). */
    results: z.number().int().positive().default(200),
    users: z.number().int().positive().default(10),
    latencyMs: z.number().int().min(0).default(50),
    budget: z.number().positive().default(10),
    workers: z.number().int().min(1).max(8).default(4),
    /** Nights measured after the first load. */
    nights: z.number().int().min(1).max(10).default(1),
    /** The workers' CPU per organisation-night this bench must not exceed (ms): half the 42.8 ms of the code before (1,000 organisations, docs/benchmarks.md). */
    targetWorkerMs: z.number().positive().default(21.4),
    timeoutSeconds: z.number().positive().default(3_600),
    /** Seconds the workers are watched idle between the first load and the nights. */
    idleSeconds: z.number().positive().default(10),
  })
  .strict();
type Args = z.infer<typeof argsSchema>;

const round = (value: number, digits = 0): number => Number(value.toFixed(digits));
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const slugOf = (i: number): string => `n${String(i + 1).padStart(4, '0')}`;

export interface NightFigures {
  args: Args;
  loadAverage: { before: number[]; after: number[] };
  firstLoad: { wallSeconds: number; workersCpuSeconds: number; exit: number | string };
  /** The workers' CPU a second (all of them) with no job, before the nights. */
  idleCpuMsPerSecond: number;
  nights: Array<{ wallSeconds: number; exit: number | string; runs: number; workersCpuMs: number; postgresCpuMs: number; syncCommandCpuMs: number; redisCpuMs: number | null; simulatorCpuMs: number | null }>;
  /** Means over the measured nights, per organisation-night (ms). */
  workersCpuMsPerOrgNight: number;
  postgresCpuMsPerOrgNight: number;
  syncCommandCpuMsPerOrgNight: number;
  redisCpuMsPerOrgNight: number | null;
  simulatorCpuMsPerOrgNight: number | null;
  /** Runs of the measured nights by resource and status (every one must have succeeded, none read a new result). */
  runs: Array<{ resource: string; status: string; runs: number; inserted: number; updated: number }>;
  workers: Array<{ pid: number; peakRssMb: number }>;
  targets: Array<{ name: string; pass: boolean; detail: string }>;
}

export async function benchNight(input: z.input<typeof argsSchema> = {}): Promise<NightFigures> {
  const args = argsSchema.parse(input);
  const loadBefore = loadavg().map((n) => round(n, 2));
  say(`\nN. a night of ${args.orgs} organisations with no new results (${args.results} results each loaded first), ${args.latencyMs} ms latency, ${args.budget} requests/s per key, ${args.workers} workers (load average ${loadBefore.join(' ')})`);
  const slugs = Array.from({ length: args.orgs }, (_, i) => slugOf(i));
  const keys = slugs.map((slug) => `bench-${slug}-${randomBytes(8).toString('hex')}`);
  const organisations: OrganisationOptions[] = slugs.map((slug, i) => ({ apiKey: keys[i]!, name: slug }));
  const sim = await startSimulatorChild({ seed: 2_000, sizes: { results: args.results, users: args.users, courses: 4, groups: 1 }, organisations, faults: { latencyMs: args.latencyMs } });
  const deployment = await orgsDeployment('night', slugs.map((slug, i) => ({ slug, apiKey: keys[i]! })), sim.url, args.budget);
  const database = { url: deployment.databaseUrl };
  const env: Record<string, string> = {
    ...deployment.env,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
  };
  // PROF_DIR=/tmp/prof: the workers (only) write a V8 CPU profile there when they exit.
  const workerEnv = { ...env, LOG_LEVEL: 'info', ...(process.env.PROF_DIR ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.PROF_DIR}` } : {}), ...(process.env.WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WORKER_NODE_OPTIONS } : {}) };
  const workers: Proc[] = [];
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-observer' });
  const cpuPool = new pg.Pool({ connectionString: database.url, max: 1, application_name: 'bench-observer-cpu' });
  try {
    const migrate = trainsync(['migrate'], env);
    if ((await migrate.exited) !== 0) throw new Error(`trainsync migrate failed:\n${migrate.output()}`);
    await db.connect();
    for (let i = 0; i < args.workers; i += 1) workers.push(await startWorker(workerEnv));
    const workersCpu = (): number => workers.reduce((s, w) => s + cpuMs(w.child.pid!), 0);

    /** One night: `sync all --org all` to its end; its wall time, exit and the command's CPU. */
    const night = async (): Promise<{ wallSeconds: number; exit: number | string; syncCpuMs: number }> => {
      const t0 = performance.now();
      const sync = trainsync(['sync', 'all', '--org', 'all'], env);
      let syncCpuMs = 0;
      const poll = setInterval(() => {
        const now = cpuMs(sync.child.pid!);
        if (Number.isFinite(now)) syncCpuMs = now;
      }, 100);
      let giveUp: NodeJS.Timeout | undefined;
      const exit = await Promise.race([sync.exited, new Promise<string>((resolve) => (giveUp = setTimeout(resolve, args.timeoutSeconds * 1000, 'timeout')))]);
      clearTimeout(giveUp);
      clearInterval(poll);
      if (exit === 'timeout') await stop(sync, 10_000, 'SIGINT');
      if (exit !== 0) say(`   sync exited ${exit}:\n${sync.output().slice(-2_000)}`);
      return { wallSeconds: round((performance.now() - t0) / 1000, 1), exit, syncCpuMs };
    };

    const cpuLoad0 = workersCpu();
    const first = await night();
    const firstLoad = { wallSeconds: first.wallSeconds, workersCpuSeconds: round((workersCpu() - cpuLoad0) / 1000, 1), exit: first.exit };
    say(`   first load: ${first.wallSeconds} s, workers' CPU ${firstLoad.workersCpuSeconds} s, exit ${first.exit}`);
    // The workers with nothing to do, for as long as `idleSeconds`: what they cost a second whatever the jobs.
    const idle0 = workersCpu();
    await new Promise((resolve) => setTimeout(resolve, args.idleSeconds * 1000));
    const idleCpuMsPerSecond = round((workersCpu() - idle0) / args.idleSeconds, 1);
    say(`   idle: the ${args.workers} workers took ${idleCpuMsPerSecond} ms of CPU a second with no job`);
    const { rows: idRows } = await db.query<{ id: number }>('select coalesce(max(id), 0)::int as id from trainsync.runs');
    const firstRunId = idRows[0]!.id;

    const simPid = simulatorPid();
    const redisPid = redisServerPid();
    const nights: NightFigures['nights'] = [];
    for (let n = 0; n < args.nights; n += 1) {
      const backends = new BackendCpuSampler(cpuPool, new URL(database.url).pathname.slice(1));
      const { rows: before } = await db.query<{ id: number }>('select coalesce(max(id), 0)::int as id from trainsync.runs');
      await backends.start();
      const simCpu0 = simPid === undefined ? undefined : processCpuMicros(simPid);
      const redisCpu0 = redisPid === undefined ? undefined : processCpuMicros(redisPid);
      const cpu0 = workersCpu();
      const one = await night();
      const workersCpuMs = workersCpu() - cpu0;
      const postgresCpuMs = (await backends.stop()) / 1000;
      const since = (pid: number | undefined, at: number | undefined): number | null => {
        const now = pid === undefined ? undefined : processCpuMicros(pid);
        return now === undefined || at === undefined ? null : (now - at) / 1000;
      };
      const { rows: runCount } = await db.query<{ n: number }>('select count(*)::int as n from trainsync.runs where id > $1', [before[0]!.id]);
      nights.push({ wallSeconds: one.wallSeconds, exit: one.exit, runs: runCount[0]!.n, workersCpuMs: round(workersCpuMs), postgresCpuMs: round(postgresCpuMs), syncCommandCpuMs: round(one.syncCpuMs), redisCpuMs: since(redisPid, redisCpu0), simulatorCpuMs: since(simPid, simCpu0) });
      say(`   night ${n + 1}: ${one.wallSeconds} s, ${runCount[0]!.n} runs, workers' CPU ${round(workersCpuMs / args.orgs, 2)} ms per organisation, Postgres' ${round(postgresCpuMs / args.orgs, 2)} ms, exit ${one.exit}`);
    }
    const { rows: runs } = await db.query<{ resource: string; status: string; runs: number; inserted: number; updated: number }>(
      'select resource, status, count(*)::int as runs, sum(inserted)::int as inserted, sum(updated)::int as updated from trainsync.runs where id > $1 group by resource, status order by resource, status',
      [firstRunId],
    );
    const mean = (pick: (n: NightFigures['nights'][number]) => number | null): number | null => {
      const values = nights.map(pick);
      return values.some((v) => v === null) ? null : round(values.reduce<number>((s, v) => s + v!, 0) / values.length / args.orgs, 2);
    };
    const workersPer = mean((n) => n.workersCpuMs)!;
    const postgresPer = mean((n) => n.postgresCpuMs)!;
    const resultsRuns = runs.filter((r) => r.resource === 'results');
    const allSucceeded = runs.every((r) => r.status === 'succeeded') && nights.every((n) => n.exit === 0 && n.runs === syncResources(allJobs).length * args.orgs);
    const targets = [
      {
        name: 'every run of the night succeeded, no new result read',
        pass: allSucceeded && resultsRuns.every((r) => r.inserted === 0),
        detail: `${runs.map((r) => `${r.resource} ${r.status} ×${r.runs} +${r.inserted} ~${r.updated}`).join(', ')}; \`sync\` exited ${nights.map((n) => n.exit).join(', ')}`,
      },
      { name: `workers' CPU per organisation-night ≤ ${args.targetWorkerMs} ms`, pass: workersPer <= args.targetWorkerMs, detail: `${workersPer} ms (Postgres' ${postgresPer} ms beside it; mean of ${nights.length} night${nights.length === 1 ? '' : 's'})` },
    ];
    const workerFigures = workers.map((w) => ({ pid: w.child.pid!, peakRssMb: peakRssMb(w.child.pid!) }));
    const loadAfter = loadavg().map((n) => round(n, 2));
    for (const t of targets) say(`   ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.detail}`);
    say(`   load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}`);
    return {
      args,
      loadAverage: { before: loadBefore, after: loadAfter },
      firstLoad,
      idleCpuMsPerSecond,
      nights,
      workersCpuMsPerOrgNight: workersPer,
      postgresCpuMsPerOrgNight: postgresPer,
      syncCommandCpuMsPerOrgNight: mean((n) => n.syncCommandCpuMs)!,
      redisCpuMsPerOrgNight: mean((n) => n.redisCpuMs),
      simulatorCpuMsPerOrgNight: mean((n) => n.simulatorCpuMs),
      runs,
      workers: workerFigures,
      targets,
    };
  } finally {
    // SIGTERM: a worker writes its CPU profile (PROF_DIR) as it exits.
    await Promise.all(workers.map((w) => stop(w)));
    await cpuPool.end().catch(() => undefined);
    await db.end().catch(() => undefined);
    await deployment.cleanUp();
    sim.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchNight(JSON.parse(process.argv[2] ?? '{}') as z.input<typeof argsSchema>);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
