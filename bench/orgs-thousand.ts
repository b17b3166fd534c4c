/**
 * A thousand organisations across several worker processes: one simulator (a child
 * process) serving 1,000 keys of 2,000 results each at 50 ms latency, an orgs file with a
 * budget of 10 requests/s per key, 4 `trainsync worker` processes (default concurrency and
 * pool), Postgres with its own `max_connections`, and `trainsync sync results --org all` as a
 * user runs it. Halfway through (by rows loaded) one worker is killed with SIGKILL.
 *
 * Targets, each printed with PASS or MISS:
 * - every organisation loaded exactly (its count equals the simulator's), none twice (one
 *   succeeded run per organisation whose inserts add up to its count, no duplicate row);
 * - the workers' CPU per result ≤ 15 µs (/proc of the worker processes; the wall time is shown,
 *   not judged: on two shared cores it is bound by everyone's CPU, Postgres', Redis' and the
 *   simulator's too, docs/benchmarks.md);
 * - Postgres connections never above 90 (pg_stat_activity sampled every 250 ms: trainsync's
 *   on this bench's database; the whole server's, others' included on a shared machine, beside);
 * - per-key requests never over budget in any sliding second (Redis's grant log, by Redis's
 *   clock: see docs/benchmarks.md on why the simulator's stamps run late under load);
 * - peak RSS per worker ≤ 300 MB (VmHWM).
 *
 * Run: node bin/run-ts.js bench/orgs-thousand.ts                       (the full size)
 *      node bin/run-ts.js bench/orgs-thousand.ts '{"orgs":100}'        (a scaled-down look)
 * Prints one JSON line with the figures last.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { clusterSafePrefix } from '../src/lib/redis-target.ts';
import { budgetIdentity } from '../src/platform/client.ts';
import { budgetKeys } from '../src/platform/request-budget.ts';
import type { OrganisationOptions } from '../src/simulator/index.ts';
import { orgsDeployment } from './orgs-deployment.ts';
import { startArrivalCapture, type ArrivalCapture } from './arrivals-capture.ts';
import { watchGrants } from './arrivals-per-key.ts';
import { judgePerKeyBudget, type BudgetVerdict, type KeyRecord } from './budget-verdict.ts';
import { BackendCpuSampler, processCpuMicros, redisServerPid, simulatorPid } from './sync-proc-cpu.ts';
import { warmOrgs } from './warm-orgs.ts';
import { cpuMs, peakRssMb, startWorker, stop, trainsync, type Proc } from './orgs.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { thousandPhases, type ThousandPhases } from './thousand-phases.ts';

const argsSchema = z
  .object({
    orgs: z.number().int().min(2).max(5_000).default(1_000),
    results: z.number().int().positive().default(2_000),
    users: z.number().int().positive().default(10),
    latencyMs: z.number().int().min(0).default(50),
    budget: z.number().positive().default(10),
    workers: z.number().int().min(2).max(8).default(4),
    /** Share of all rows loaded when one worker is killed. */
    killAt: z.number().min(0).max(1).default(0.5),
    /** Serve every results page once before the timed load (see warm-orgs.ts); false: a cold simulator, as before. */
    warm: z.boolean().default(true),
    timeoutSeconds: z.number().positive().default(3_600),
    /** TRAINSYNC_WORKER_CONCURRENCY for the workers; unset: trainsync's default. */
    concurrency: z.number().int().positive().optional(),
    /** Per-key arrivals by the kernel's capture time on loopback (tcpdump or dumpcap, root): 'auto' when a tool can start, 'on' requires it. */
    capture: z.enum(['auto', 'on', 'off']).default('auto'),
  })
  .strict();
type Args = z.infer<typeof argsSchema>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 0): number => Number(value.toFixed(digits));
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const slugOf = (i: number): string => `c${String(i + 1).padStart(4, '0')}`;

export interface ThousandFigures {
  args: Args;
  loadAverage: { before: number[]; after: number[] };
  wallSeconds: number | null;
  budgetBoundSeconds: number;
  workersCpuSeconds: number;
  cpuBoundSeconds: number;
  exact: { orgs: number; loadedExactly: number; wrong: string[]; duplicateRows: number; runsNotOnce: string[] };
  connections: { peakServer: number; peakDatabase: number; samples: number };
  perKey: BudgetVerdict;
  /** CPU seconds of the rest of the load on the same cores, during the timed load: the simulator, this database's Postgres backends, the sync command, redis-server (shared with others). */
  otherCpuSeconds: { simulator: number | null; postgres: number; syncCommand: number | null; redis: number | null };
  workers: Array<{ pid: number; cpuMs: number; peakRssMb: number; killed: boolean }>;
  killedAtRows: number | null;
  syncExit: number | string | null;
  phases: ThousandPhases;
  targets: Array<{ name: string; pass: boolean; detail: string }>;
}

export async function benchThousand(input: z.input<typeof argsSchema> = {}): Promise<ThousandFigures> {
  const args = argsSchema.parse(input);
  const loadBefore = loadavg().map((n) => round(n, 2));
  say(`\nC. ${args.orgs} organisations × ${args.results} results, ${args.latencyMs} ms latency, ${args.budget} requests/s per key, ${args.workers} workers, one killed at ${args.killAt * 100}% (load average ${loadBefore.join(' ')})`);
  const slugs = Array.from({ length: args.orgs }, (_, i) => slugOf(i));
  const keys = slugs.map((slug) => `bench-${slug}-${randomBytes(8).toString('hex')}`);
  // Sizes and seeds from the simulator's defaults (seed + position): the options travel as one
  // command-line argument, which Linux caps at 128 kB.
  const organisations: OrganisationOptions[] = slugs.map((slug, i) => ({ apiKey: keys[i]!, name: slug }));
  const started = performance.now();
  const sim = await startSimulatorChild({ seed: 1_000, sizes: { results: args.results, users: args.users, courses: 4, groups: 1 }, organisations, faults: { latencyMs: args.latencyMs } });
  say(`   simulator up in ${round((performance.now() - started) / 1000, 1)} s at ${sim.url}`);
  const summary = z
    .object({ organisations: z.array(z.object({ name: z.string(), results: z.number(), undatedResults: z.number() })) })
    .parse(await (await fetch(`${sim.url}/__simulator/organisations`)).json());
  const expected = Object.fromEntries(summary.organisations.map((o) => [o.name, o.results + o.undatedResults]));
  if (args.warm) {
    const warmStarted = performance.now();
    await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: 0 }) });
    await warmOrgs(sim.url, slugs.map((slug, i) => ({ apiKey: keys[i]!, pages: Math.ceil(expected[slug]! / 50) })));
    await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: args.latencyMs }) });
    say(`   simulator warmed (every results page once) in ${round((performance.now() - warmStarted) / 1000, 1)} s`);
  }
  const deployment = await orgsDeployment('thousand', slugs.map((slug, i) => ({ slug, apiKey: keys[i]! })), sim.url, args.budget);
  const { redisUrl, prefix } = deployment;
  const database = { url: deployment.databaseUrl };
  const env: Record<string, string> = {
    ...deployment.env,
    // A killed worker's jobs are found stalled after this long (60 s by default).
    TRAINSYNC_JOB_LOCK_MS: '10000',
    TRAINSYNC_STALLED_INTERVAL_MS: '5000',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    ...(args.concurrency === undefined ? {} : { TRAINSYNC_WORKER_CONCURRENCY: String(args.concurrency) }),
    // PROF_DIR=/tmp/prof: every trainsync process writes a V8 CPU profile there when it exits (not the killed worker).
    ...(process.env.PROF_DIR ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.PROF_DIR}` } : {}),
  };
  const workers: Proc[] = [];
  let sync: Proc | undefined;
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-observer' });
  const origin = new URL(sim.url).origin;
  const grantKeys = new Map(slugs.map((slug, i) => [budgetKeys(clusterSafePrefix(prefix, redisUrl), budgetIdentity(origin, keys[i]!)).log, slug]));
  let grants: ReturnType<typeof watchGrants> | undefined;
  let capture: ArrivalCapture | undefined;
  let captureUnavailable: string | undefined = args.capture === 'off' ? 'capture off' : undefined;
  try {
    const migrate = trainsync(['migrate'], env);
    if ((await migrate.exited) !== 0) throw new Error(`trainsync migrate failed:\n${migrate.output()}`);
    await db.connect();
    // `worker started` is an info line: the workers log at info, the sync at warn.
    for (let i = 0; i < args.workers; i += 1) workers.push(await startWorker({ ...env, LOG_LEVEL: 'info' }));
    await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
    // Polled often enough to see every grant before the log trims it (grants counted ≥ requests made says so).
    grants = watchGrants(redisUrl, grantKeys, 50);
    if (args.capture !== 'off') {
      const started = await startArrivalCapture(Number(new URL(sim.url).port));
      if ('unavailable' in started) {
        if (args.capture === 'on') throw new Error(`capture: ${started.unavailable}`);
        captureUnavailable = started.unavailable;
      } else capture = started;
    }

    const connections = { peakServer: 0, peakDatabase: 0, samples: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await db.query<{ server: number; here: number }>(
          "select count(*)::int as server, (count(*) filter (where datname = current_database() and application_name like 'trainsync%'))::int as here from pg_stat_activity where backend_type = 'client backend'",
        );
        connections.peakServer = Math.max(connections.peakServer, rows[0]!.server);
        connections.peakDatabase = Math.max(connections.peakDatabase, rows[0]!.here);
        connections.samples += 1;
        await sleep(250);
      }
    })();

    const total = Object.values(expected).reduce((a, b) => a + b, 0);
    const cpuPool = new pg.Pool({ connectionString: database.url, max: 1, application_name: 'bench-observer-cpu' });
    const backends = new BackendCpuSampler(cpuPool, new URL(database.url).pathname.slice(1));
    await backends.start();
    const simPid = simulatorPid();
    const redisPid = redisServerPid();
    const simCpu0 = simPid === undefined ? undefined : processCpuMicros(simPid);
    const redisCpu0 = redisPid === undefined ? undefined : processCpuMicros(redisPid);
    let syncCpuMs: number | null = null;
    const cpu0 = workers.map((w) => cpuMs(w.child.pid!));
    const cpuAtKill = new Map<number, number>();
    const rssAtKill = new Map<number, number>();
    const t0 = performance.now();
    const spawnedAtMs = Date.now();
    sync = trainsync(['sync', 'results', '--org', 'all'], env);
    let killedAtRows: number | null = null;
    let wallSeconds: number | null = null;
    const deadline = t0 + args.timeoutSeconds * 1000;
    let lastSay = 0;
    for (;;) {
      // Rows committed, from the runs' counters (moved in each batch's own transaction): a
      // count(*) of training.results every 500 ms scanned up to 2,000,000 rows each time, and
      // that Postgres CPU was the bench's, taken from the load on the same two cores.
      const { rows } = await db.query<{ n: number }>("select coalesce(sum(inserted), 0)::int as n from trainsync.runs where resource = 'results'");
      const loaded = rows[0]!.n;
      if (killedAtRows === null && loaded >= total * args.killAt) {
        const victim = workers[0]!;
        cpuAtKill.set(victim.child.pid!, cpuMs(victim.child.pid!) - cpu0[0]!);
        rssAtKill.set(victim.child.pid!, peakRssMb(victim.child.pid!));
        victim.child.kill('SIGKILL');
        await victim.exited;
        killedAtRows = loaded;
        say(`   killed worker ${victim.child.pid} with SIGKILL at ${loaded} of ${total} rows (${round((performance.now() - t0) / 1000, 1)} s)`);
      }
      if (sync.child.exitCode === null) syncCpuMs = cpuMs(sync.child.pid!);
      if (loaded >= total) {
        wallSeconds = round((performance.now() - t0) / 1000, 1);
        break;
      }
      if (performance.now() - lastSay > 15_000) {
        lastSay = performance.now();
        say(`   ${round((performance.now() - t0) / 1000)} s: ${loaded} of ${total} rows; connections: server ${connections.peakServer}, this database ${connections.peakDatabase} at most`);
      }
      if (performance.now() > deadline || (sync.child.exitCode !== null && loaded < total)) break;
      await sleep(500);
    }
    // The timer must not keep the bench alive once the command has exited (it did, for 120 s after every run).
    let giveUp: NodeJS.Timeout | undefined;
    const syncExit = await Promise.race([sync.exited, new Promise<null>((resolve) => (giveUp = setTimeout(resolve, 120_000, null)))]);
    clearTimeout(giveUp);
    const workerFigures = workers.map((w, i) => {
      const pid = w.child.pid!;
      const killed = cpuAtKill.has(pid);
      return { pid, cpuMs: Math.round(killed ? cpuAtKill.get(pid)! : cpuMs(pid) - cpu0[i]!), peakRssMb: killed ? rssAtKill.get(pid)! : peakRssMb(pid), killed };
    });
    sampling = false;
    await sampler;
    const micros = (pid: number | undefined, before: number | undefined): number | null => {
      const now = pid === undefined ? undefined : processCpuMicros(pid);
      return now === undefined || before === undefined ? null : round((now - before) / 1e6, 1);
    };
    const otherCpuSeconds = {
      simulator: micros(simPid, simCpu0),
      postgres: round((await backends.stop()) / 1e6, 1),
      syncCommand: syncCpuMs === null ? null : round(syncCpuMs / 1000, 1),
      redis: micros(redisPid, redisCpu0),
    };
    await cpuPool.end();
    say(`   CPU of the rest during the load (s): ${JSON.stringify(otherCpuSeconds)}`);
    const phases = await thousandPhases({ db, redisUrl, queuePrefix: prefix, spawnedAtMs });
    say(`   phases (s after the spawn): ${JSON.stringify(phases)}`);
    const granted = await grants.stop();
    grants = undefined;
    const captured = capture ? await capture.stop() : undefined;
    capture = undefined;
    const capturedByKey = new Map<string, number[]>();
    if (captured) {
      const slugOfKey = new Map(slugs.map((slug, i) => [`Bearer ${keys[i]!}`, slug]));
      for (const r of captured.requests) {
        const slug = r.authorization === undefined ? undefined : slugOfKey.get(r.authorization);
        if (slug === undefined) continue;
        let list = capturedByKey.get(slug);
        if (!list) capturedByKey.set(slug, (list = []));
        list.push(r.at);
      }
      for (const list of capturedByKey.values()) list.sort((a, b) => a - b);
      say(`   capture: ${captured.requests.length} requests, ${captured.streamGaps} stream gaps, ${captured.dropped ?? 'unknown'} packets dropped by the kernel`);
    } else say(`   no capture: ${captureUnavailable ?? 'not started'}`);
    // Exact: counts per organisation, one succeeded run each whose inserts add up, no duplicates.
    const { rows: countRows } = await db.query<{ org: string; n: number }>('select org, count(*)::int as n from training.results group by org');
    const counted = new Map(countRows.map((r) => [r.org, r.n]));
    const wrong = slugs.filter((slug) => counted.get(slug) !== expected[slug]);
    const { rows: dupes } = await db.query<{ n: number }>('select count(*)::int as n from (select 1 from training.results group by org, result_id having count(*) > 1) d');
    const { rows: runs } = await db.query<{ org: string; succeeded: number; running: number; inserted: number; runs: string }>(
      "select org, (count(*) filter (where status = 'succeeded'))::int as succeeded, (count(*) filter (where status = 'running'))::int as running, sum(inserted)::int as inserted, string_agg(status || ' ' || mode || ' +' || inserted || ' =' || unchanged, '; ' order by id) as runs from trainsync.runs where resource = 'results' group by org",
    );
    const runsOf = new Map(runs.map((r) => [r.org, r]));
    // Loaded twice: a row inserted twice (the inserts of its runs add up to more than its count), or a run left unfinished.
    const runsNotOnce = slugs.filter((slug) => {
      const r = runsOf.get(slug);
      return !r || r.succeeded < 1 || r.running !== 0 || r.inserted !== expected[slug];
    });
    // A job whose run committed just before its worker died is run again (BullMQ never heard it finish): a re-read that inserts nothing.
    const readAgain = slugs.filter((slug) => (runsOf.get(slug)?.succeeded ?? 0) > 1);
    for (const slug of [...runsNotOnce, ...readAgain].slice(0, 5)) say(`   ${slug}: runs ${runsOf.get(slug)?.runs ?? 'none'} (platform ${expected[slug]})`);

    // One organisation's budget-bound time: its requests at its budget.
    const perOrg = z.object({ organisations: z.array(z.object({ name: z.string(), total: z.number() })) }).parse(await (await fetch(`${sim.url}/__simulator/requests/organisations`)).json());
    // One organisation's load, as the issue defines it: the median organisation's requests. Not the
    // most: an organisation whose job was read again after the kill made two loads' requests.
    const totals = perOrg.organisations.map((o) => o.total).sort((a, b) => a - b);
    const requestsPerOrg = totals[Math.floor((totals.length - 1) / 2)]!;
    const mostRequestsOfOneOrg = totals.at(-1)!;
    // Every request of every key, from the simulator's untrimmed per-key record, beside the grants the poll saw.
    const perKeyArrivals = z
      .object({ organisations: z.array(z.object({ name: z.string(), total: z.number(), maxInAnyWindow: z.number() })) })
      .parse(await (await fetch(`${sim.url}/__simulator/requests/per-key?windowMs=1000&limit=${args.budget}`)).json());
    const keyRecords = new Map<string, KeyRecord>(perKeyArrivals.organisations.map((o) => [o.name, { requests: o.total, maxByStamp: o.maxInAnyWindow, grants: granted.get(o.name) ?? [], ...(captured ? { captured: capturedByKey.get(o.name) ?? [] } : {}) }]));
    const perKeyFigures = judgePerKeyBudget(args.budget, keyRecords);
    const budgetBoundSeconds = round(requestsPerOrg / args.budget, 1);
    const workersCpuSeconds = round(workerFigures.reduce((s, w) => s + w.cpuMs, 0) / 1000, 1);
    const cpuBoundSeconds = round(workersCpuSeconds / 2, 1);
    const cpuMicrosPerResult = round((workersCpuSeconds * 1e6) / total, 1);

    const targets = [
      { name: 'every organisation loaded exactly', pass: wrong.length === 0, detail: `${args.orgs - wrong.length} of ${args.orgs} exact${wrong.length ? ` (wrong: ${wrong.slice(0, 5).join(', ')}${wrong.length > 5 ? ', …' : ''})` : ''}` },
      {
        name: 'none loaded twice',
        pass: runsNotOnce.length === 0 && dupes[0]!.n === 0,
        detail: `${dupes[0]!.n} duplicate rows; ${runsNotOnce.length} organisations whose runs' inserts differ from their count or with a run left unfinished; ${readAgain.length} read again after the kill (a second run inserting nothing)`,
      },
      { name: "workers' CPU per result ≤ 15 µs", pass: cpuMicrosPerResult <= 15, detail: `${cpuMicrosPerResult} µs (${workersCpuSeconds} s for ${total} results; wall ${wallSeconds ?? 'not all loaded'} s, not judged: ${budgetBoundSeconds} s budget-bound (${requestsPerOrg} requests at ${args.budget}/s, the median organisation's; the most: ${mostRequestsOfOneOrg}), Postgres ${otherCpuSeconds.postgres} s of CPU beside the workers' on the same two cores)` },
      // The deployment's connections: every trainsync process's on this database. The whole
      // server's count is shown beside it; on a shared machine it includes other people's.
      { name: 'Postgres connections ≤ 90', pass: connections.peakDatabase <= 90, detail: `at most ${connections.peakDatabase} of trainsync (${args.workers} workers and the sync command) on this database; ${connections.peakServer} on the whole server, others' included; ${connections.samples} samples` },
      {
        name: 'per-key requests within budget',
        pass: perKeyFigures.pass,
        detail: `at most ${perKeyFigures.maxPerKey} in any sliding second (${perKeyFigures.worstKey ?? '—'}): ${perKeyFigures.keysByCapture} keys by packet capture (every request of the key captured${captureUnavailable ? `; no capture: ${captureUnavailable}` : ''}), ${perKeyFigures.keysByGrants} by Redis's grant log (every request of the key has its grant: ${perKeyFigures.grantsSeen} grants seen for ${perKeyFigures.requests} requests in all), ${perKeyFigures.keysByStamp} by the simulator's stamps (grants missed by the poll); ${perKeyFigures.over.length} keys over${perKeyFigures.over.length ? ` (${perKeyFigures.over.slice(0, 5).map((o) => `${o.key} ${o.count} by ${o.by}`).join(', ')})` : ''}; the simulator's stamps alone: at most ${perKeyFigures.maxByStamp}`,
      },
      { name: 'peak RSS per worker ≤ 300 MB', pass: workerFigures.every((w) => w.peakRssMb <= 300), detail: workerFigures.map((w) => `${w.peakRssMb} MB${w.killed ? ' (killed)' : ''}`).join(', ') },
      { name: 'one worker killed halfway, everything exact', pass: killedAtRows !== null && wrong.length === 0 && runsNotOnce.length === 0 && dupes[0]!.n === 0, detail: killedAtRows === null ? 'no worker was killed' : `killed at ${killedAtRows} of ${total} rows` },
    ];
    const loadAfter = loadavg().map((n) => round(n, 2));
    for (const t of targets) say(`   ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.detail}`);
    say(`   load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}; CPU per result ${cpuMicrosPerResult} µs`);
    return {
      args,
      loadAverage: { before: loadBefore, after: loadAfter },
      wallSeconds,
      budgetBoundSeconds,
      workersCpuSeconds,
      cpuBoundSeconds,
      exact: { orgs: args.orgs, loadedExactly: args.orgs - wrong.length, wrong, duplicateRows: dupes[0]!.n, runsNotOnce },
      connections,
      perKey: perKeyFigures,
      otherCpuSeconds,
      workers: workerFigures,
      killedAtRows,
      syncExit,
      phases,
      targets,
    };
  } finally {
    await capture?.stop().catch(() => undefined);
    await grants?.stop();
    if (sync) await stop(sync, 10_000, 'SIGINT');
    await Promise.all(workers.map((w) => stop(w)));
    await db.end().catch(() => undefined);
    await deployment.cleanUp();
    sim.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await benchThousand(JSON.parse(process.argv[2] ?? '{}') as z.input<typeof argsSchema>);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
