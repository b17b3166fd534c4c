import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/**
 * Wrong settings, named in seconds: wall time from spawning `trainsync sync courses` to the
 * one line that names the fault (or, for a service that never answers, says what it waits
 * for), for a refused API URL, an API URL whose host does not resolve, a Redis that drops
 * the connection, a Redis that never answers and a Postgres that never answers. Beside
 * `--help` (the start-up alone). Target: under 5 s each (was 147 s for the API URL, 31 s
 * and 30 s for Redis). Run: node bin/run-ts.js bench/settings.ts
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 3;
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function listen(onSocket: (socket: net.Socket) => void): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** Milliseconds from spawn to the first line of output matching `line` (then the process is killed). */
function timeToLine(args: string[], env: Record<string, string>, line: RegExp): Promise<{ ms: number; said: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/trainsync.js', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    let found: { ms: number; said: string } | undefined;
    const onData = (chunk: Buffer): void => {
      if (found) return;
      text += chunk.toString('utf8');
      const hit = text.split('\n').find((l) => line.test(l));
      if (hit === undefined) return;
      found = { ms: Math.round(performance.now() - started), said: hit.startsWith('{') ? String((JSON.parse(hit) as { msg?: unknown }).msg) : hit };
      child.kill('SIGKILL');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', () => (found ? resolve(found) : reject(new Error(`${args.join(' ')} ended without a line matching ${line}:\n${text.slice(-1500)}`))));
  });
}

function timeToExit(args: string[]): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/trainsync.js', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(Math.round(performance.now() - started)));
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const name = `bench_settings_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`create database ${admin.escapeIdentifier(name)}`);
const databaseUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${name}` }).toString();
const prefix = `bench-settings-${randomUUID()}`;
const closed = await listen(() => undefined);
const closedPort = closed.port;
closed.close();
const dropping = await listen((socket) => socket.destroy());
const silent = await listen(() => undefined);

const base = { TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'bench-key', DATABASE_URL: databaseUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: prefix, TRAINSYNC_METRICS_PORT: '0' };
const scenarios: Array<{ key: string; label: string; env: Record<string, string>; line: RegExp }> = [
  { key: 'apiUrlRefused', label: 'refused API URL', env: { TRAINSYNC_API_URL: `http://127.0.0.1:${closedPort}` }, line: /^trainsync: TRAINSYNC_API_URL was not reached/ },
  { key: 'apiUrlUnresolvable', label: 'unresolvable API URL', env: { TRAINSYNC_API_URL: 'http://nonexistent.invalid' }, line: /^trainsync: TRAINSYNC_API_URL was not reached/ },
  { key: 'redisDropping', label: 'Redis dropping the connection', env: { REDIS_URL: `redis://127.0.0.1:${dropping.port}` }, line: /^trainsync: .*REDIS_URL/ },
  { key: 'redisSilent', label: 'Redis never answering (the "connecting to" line)', env: { REDIS_URL: `redis://127.0.0.1:${silent.port}` }, line: /connecting to redis:\/\/.*\(waiting up to/ },
  { key: 'postgresSilent', label: 'Postgres never answering (the "connecting to" line)', env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/x` }, line: /connecting to postgres:\/\/.*\(waiting up to/ },
];

const figures: Record<string, unknown> = {};
try {
  // Migrated once first, so the API URL runs measure the fault, not the first migration.
  await timeToLine(['sync', 'courses'], { ...base, TRAINSYNC_API_URL: `http://127.0.0.1:${closedPort}` }, /^trainsync: /);
  const help: number[] = [];
  for (let i = 0; i < RUNS; i++) help.push(await timeToExit(['--help']));
  figures.helpMs = { medianMs: median(help), maxMs: Math.max(...help) };
  for (const scenario of scenarios) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await timeToLine(['sync', 'courses'], { ...base, ...scenario.env }, scenario.line));
    const ms = runs.map((r) => r.ms);
    figures[scenario.key] = { label: scenario.label, medianMs: median(ms), maxMs: Math.max(...ms), said: runs[0]!.said };
    process.stdout.write(`${scenario.label}: median ${median(ms)} ms, max ${Math.max(...ms)} ms: ${runs[0]!.said}\n`);
  }
} finally {
  dropping.close();
  silent.close();
  await admin.query(`drop database if exists ${admin.escapeIdentifier(name)} with (force)`);
  await admin.end();
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}
process.stdout.write(`${JSON.stringify(figures)}\n`);
