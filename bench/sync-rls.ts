/**
 * What row-level security costs the load: `sync results` (a first load into an empty
 * warehouse, then a reload with part of the data changed) with row security enforced for
 * trainsync (its connections run as trainsync_app, every unit of work in a scoped
 * transaction), beside the same load without it (the owner's connections, no scope: the
 * path as it was before), in alternating pairs (enforced first, then bypass first, …) so
 * drift of the machine (a CPU hog, caches) falls on both alike. Each load gets a fresh
 * database; one simulator serves them all.
 *
 *   node bin/run-ts.js bench/sync-rls.ts '{"results":200000,"pairs":3}'
 *
 * Prints one JSON line with the figures.
 */
import { warmResults as warmPages } from './warm-results.ts';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { allJobs } from '../jobs/index.ts';
import { scopedApp } from '../src/commands/options/scoped.ts';
import { loadConfig } from '../src/config.ts';
import { DEFAULT_ORG } from '../src/settings/orgs-file.ts';
import { createApp } from '../src/runtime/app.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runSync } from '../src/sync/run-and-wait.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { sql } from 'kysely';
import { adminQuery } from './admin-query.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { startSimulatorChild } from './simulator-child.ts';
import { BackendCpuSampler } from './sync-proc-cpu.ts';
import pg from 'pg';

const args = z
  .object({
    results: z.number().int().positive().default(200_000),
    pairs: z.number().int().positive().default(4),
    changeFraction: z.number().min(0).max(1).default(0.1),
  })
  .parse(JSON.parse(process.argv[2] ?? '{}'));

const ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
type Variant = 'enforced' | 'bypass';

/** Every results page once before the timed loads: the simulator serialises a result on its first serve. */
function warm(url: string, apiKey: string): Promise<void> {
  return warmPages(url, apiKey, Math.ceil(args.results / 50) + 1);
}

interface Load {
  variant: Variant;
  pair: number;
  role: string;
  firstSeconds: number;
  reloadSeconds: number;
  /** CPU µs per result: this process (the sync) and the database's backends (where row security runs). */
  firstCpu: { sync: number; postgres: number };
  reloadCpu: { sync: number; postgres: number };
}

async function load(sim: { url: string; apiKey: string }, variant: Variant, pair: number): Promise<Load> {
  const dbName = `trainsync_bench_${randomBytes(4).toString('hex')}`;
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  try {
    const config = loadConfig({
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${dbName}`,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_REQUESTS_PER_SECOND: '10000',
      TRAINSYNC_RESULTS_WINDOW_DAYS: '31',
      TRAINSYNC_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
    });
    const app = await createApp(config, createLogger(config.LOG_LEVEL), { jobs: allJobs, migrate: true, rowSecurity: variant === 'enforced' });
    try {
      const { rows } = await sql<{ role: string }>`select current_user as role`.execute(app.scopes.unscoped);
      const full = syncPayloadSchema.parse({ trigger: 'cli', full: true });
      const admin = new pg.Pool({ connectionString: config.DATABASE_URL, max: 1 });
      // Wall time, and CPU: wall time on a shared machine moves with its neighbours; CPU per result much less.
      const timed = async (): Promise<{ seconds: number; cpu: { sync: number; postgres: number } }> => {
        const sampler = new BackendCpuSampler(admin, dbName);
        await sampler.start();
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const [outcome] = await runSync(scopedApp(app, DEFAULT_ORG), ['results'], full);
        const seconds = (performance.now() - t0) / 1000;
        const own = process.cpuUsage(cpu0);
        const postgres = await sampler.stop();
        if (outcome?.status !== 'completed') throw new Error(`sync failed: ${outcome?.error}`);
        return { seconds, cpu: { sync: round((own.user + own.system) / args.results, 1), postgres: round(postgres / args.results, 1) } };
      };
      try {
        const first = await timed();
        await fetch(`${sim.url}/__simulator/results/mutate`, { method: 'POST', body: JSON.stringify({ fraction: args.changeFraction }) });
        const reload = await timed();
        return { variant, pair, role: rows[0]!.role, firstSeconds: first.seconds, reloadSeconds: reload.seconds, firstCpu: first.cpu, reloadCpu: reload.cpu };
      } finally {
        await admin.end();
      }
    } finally {
      await app.close();
    }
  } finally {
    await adminQuery(ADMIN, `drop database if exists ${dbName} with (force)`);
    await deleteBenchKeys(REDIS, prefix);
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

const sim = await startSimulatorChild({ seed: 42, sizes: { results: args.results, users: 2_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' } });
try {
  await warm(sim.url, sim.apiKey);
  const loads: Load[] = [];
  for (let pair = 1; pair <= args.pairs; pair += 1) {
    const order: Variant[] = pair % 2 === 1 ? ['enforced', 'bypass'] : ['bypass', 'enforced'];
    for (const variant of order) {
      const done = await load(sim, variant, pair);
      loads.push(done);
      process.stderr.write(
        `pair ${pair} ${variant} (${done.role}): first load ${done.firstSeconds.toFixed(2)} s (Postgres ${done.firstCpu.postgres} µs/result, sync ${done.firstCpu.sync}), reload ${done.reloadSeconds.toFixed(2)} s (Postgres ${done.reloadCpu.postgres} µs/result, sync ${done.reloadCpu.sync})\n`,
      );
    }
  }
  const of = (variant: Variant): Load[] => loads.filter((l) => l.variant === variant);
  const summary = (variant: Variant): Record<string, number | string> => ({
    role: of(variant)[0]!.role,
    firstLoadMedianSeconds: round(median(of(variant).map((l) => l.firstSeconds))),
    firstLoadResultsPerSecond: Math.round(args.results / median(of(variant).map((l) => l.firstSeconds))),
    reloadMedianSeconds: round(median(of(variant).map((l) => l.reloadSeconds))),
    reloadResultsPerSecond: Math.round(args.results / median(of(variant).map((l) => l.reloadSeconds))),
  });
  const enforced = summary('enforced');
  const bypass = summary('bypass');
  // Per pair: enforced time over bypass time; the overhead is the median of those ratios.
  const ratios = (key: 'firstSeconds' | 'reloadSeconds'): number[] =>
    Array.from({ length: args.pairs }, (_, i) => loads.find((l) => l.pair === i + 1 && l.variant === 'enforced')![key] / loads.find((l) => l.pair === i + 1 && l.variant === 'bypass')![key]);
  const firstRatios = ratios('firstSeconds');
  const reloadRatios = ratios('reloadSeconds');
  process.stdout.write(
    `${JSON.stringify({
      results: args.results,
      pairs: args.pairs,
      changeFraction: args.changeFraction,
      enforced,
      bypass,
      firstLoadOverheadPercent: round((median(firstRatios) - 1) * 100, 1),
      reloadOverheadPercent: round((median(reloadRatios) - 1) * 100, 1),
      // Postgres CPU per result, the median of each variant's loads: where the policies are evaluated.
      postgresCpuMicrosPerResult: {
        firstLoad: { enforced: round(median(of('enforced').map((l) => l.firstCpu.postgres)), 1), bypass: round(median(of('bypass').map((l) => l.firstCpu.postgres)), 1) },
        reload: { enforced: round(median(of('enforced').map((l) => l.reloadCpu.postgres)), 1), bypass: round(median(of('bypass').map((l) => l.reloadCpu.postgres)), 1) },
      },
      syncCpuMicrosPerResult: {
        firstLoad: { enforced: round(median(of('enforced').map((l) => l.firstCpu.sync)), 1), bypass: round(median(of('bypass').map((l) => l.firstCpu.sync)), 1) },
        reload: { enforced: round(median(of('enforced').map((l) => l.reloadCpu.sync)), 1), bypass: round(median(of('bypass').map((l) => l.reloadCpu.sync)), 1) },
      },
      firstLoadRatios: firstRatios.map((r) => round(r, 3)),
      reloadRatios: reloadRatios.map((r) => round(r, 3)),
      loads: loads.map((l) => ({ ...l, firstSeconds: round(l.firstSeconds), reloadSeconds: round(l.reloadSeconds) })),
    })}\n`,
  );
} finally {
  sim.stop();
}
