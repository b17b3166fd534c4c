import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How fast a missing service is reported: `trainsync doctor` and `trainsync status`
 * against a closed Redis port and a closed Postgres port (nothing listens: the
 * connection is refused at once), wall time from spawn to exit, beside `--help` (the
 * start-up alone). Issue 17: under 2 s, where a missing Redis used to take 31 s.
 * Run: node bin/run-ts.js bench/doctor.ts
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 5;

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function timed(args: string[], env: Record<string, string>): Promise<{ ms: number; code: number | null }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/trainsync.js', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ ms: Math.round(performance.now() - started), code }));
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(args: string[], env: Record<string, string>): Promise<{ medianMs: number; maxMs: number; codes: number[] }> {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await timed(args, env));
  return { medianMs: median(runs.map((r) => r.ms)), maxMs: Math.max(...runs.map((r) => r.ms)), codes: [...new Set(runs.map((r) => r.code ?? -1))] };
}

// A migrated database, so `status` reaches Redis (an unmigrated one is refused before that).
const BENCH_DB = 'trainsync_bench_doctor';
const migrated = await timed(['migrate'], { DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${BENCH_DB}` });
if (migrated.code !== 0) throw new Error(`trainsync migrate exited ${migrated.code}`);
const redisPort = await closedPort();
const pgPort = await closedPort();
const good = { DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${BENCH_DB}`, REDIS_URL: 'redis://127.0.0.1:6379' };
const noRedis = { ...good, REDIS_URL: `redis://:secret@127.0.0.1:${redisPort}` };
const noPostgres = { ...good, DATABASE_URL: `postgres://postgres:secret@127.0.0.1:${pgPort}/trainsync` };

const figures = {
  helpMs: await measure(['--help'], good),
  doctorNoRedis: await measure(['doctor'], noRedis),
  doctorNoPostgres: await measure(['doctor'], noPostgres),
  statusNoRedis: await measure(['status'], noRedis),
  statusNoPostgres: await measure(['status'], noPostgres),
};
for (const [name, f] of Object.entries(figures)) process.stdout.write(`${name.padEnd(18)} median ${f.medianMs} ms, max ${f.maxMs} ms, exit ${f.codes.join('/')}\n`);
process.stdout.write(`${JSON.stringify(figures)}\n`);
