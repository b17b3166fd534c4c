import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { adminQuery } from './admin-query.ts';
import { deleteBenchKeys } from './redis-cleanup.ts';
import { startSimulatorChild } from './simulator-child.ts';

/**
 * Start-up of the CLI as a person runs it: `trainsync --help` wall time, and for
 * `trainsync sync results` (no worker running, so it does the job itself) the time from
 * spawning the process to its first request at the simulator and its RSS just before
 * (sampled from /proc every 5 ms). Each is measured for bin/trainsync.js (the build in
 * dist/, `npm run build`) and for the TypeScript sources through tsx's loader, which is
 * what it ran before there was a build.
 * Run: node bin/run-ts.js bench/startup.ts
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
const RUNS = 5;

/** How each way starts the CLI: the arguments to `node` before the command's own. */
const WAYS = {
  compiled: ['bin/trainsync.js'],
  tsx: ['--import', 'tsx', 'src/cli.ts'],
} as const;
type Way = keyof typeof WAYS;

export interface StartupFigures {
  helpMs: Record<Way, number>;
  sync: Record<Way, { firstRequestMs: number; rssBeforeWorkMb: number }>;
}

const now = (): number => performance.timeOrigin + performance.now();
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function run(args: readonly string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; done: Promise<number | null> } {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const done = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      if (code !== 0) process.stderr.write(`${args.join(' ')} exited with ${code}: ${stderr.slice(-2000)}\n`);
      resolve(code);
    }),
  );
  return { child, done };
}

async function helpMs(way: Way): Promise<number> {
  await run([...WAYS[way], '--help']).done; // a cache filled here (tsx's, the disk's) is not timed
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = now();
    await run([...WAYS[way], '--help']).done;
    times.push(now() - started);
  }
  return Math.round(median(times));
}

function rssMb(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

async function syncStart(way: Way, sim: { url: string; apiKey: string }): Promise<{ firstRequestMs: number; rssBeforeWorkMb: number }> {
  const database = `trainsync_bench_${randomBytes(4).toString('hex')}`;
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const env = {
    PATH: process.env.PATH,
    TRAINSYNC_API_URL: sim.url,
    TRAINSYNC_API_KEY: sim.apiKey,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    TRAINSYNC_QUEUE_PREFIX: prefix,
    TRAINSYNC_METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
  };
  try {
    // Migrated beforehand: the figure is start-up, not a first migration.
    await run([...WAYS[way], 'migrate'], env).done;
    await fetch(`${sim.url}/__simulator/requests/reset`, { method: 'POST' });
    const samples: Array<{ at: number; mb: number }> = [];
    const started = now();
    const { child, done } = run([...WAYS[way], 'sync', 'results'], env);
    const timer = setInterval(() => {
      const mb = rssMb(child.pid!);
      if (mb !== undefined) samples.push({ at: now(), mb });
    }, 5);
    await done;
    clearInterval(timer);
    const summary = z.object({ firstAt: z.number() }).parse(await (await fetch(`${sim.url}/__simulator/requests/summary`)).json());
    const before = samples.filter((s) => s.at < summary.firstAt).at(-1);
    return { firstRequestMs: Math.round(summary.firstAt - started), rssBeforeWorkMb: Math.round(before?.mb ?? Number.NaN) };
  } finally {
    await adminQuery(ADMIN, `drop database if exists ${database} with (force)`);
    await deleteBenchKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix);
  }
}

export async function benchStartup(): Promise<StartupFigures> {
  const helps = { compiled: await helpMs('compiled'), tsx: await helpMs('tsx') };
  const sim = await startSimulatorChild({ seed: 3, sizes: { results: 2_000, users: 50 } });
  try {
    const syncs = { compiled: await syncStart('compiled', sim), tsx: await syncStart('tsx', sim) };
    return { helpMs: helps, sync: syncs };
  } finally {
    sim.stop();
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const f = await benchStartup();
  for (const way of Object.keys(WAYS) as Way[]) {
    process.stdout.write(
      `${way.padEnd(9)} trainsync --help ${f.helpMs[way]} ms; sync results: first request after ${f.sync[way].firstRequestMs} ms, RSS before it ${f.sync[way].rssBeforeWorkMb} MB\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(f)}\n`);
}
