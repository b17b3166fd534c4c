/**
 * Redis faults, with real processes: a worker and `trainsync` commands against a
 * redis-server of this file's own, which is stopped for 30 s and started again empty
 * (no persistence: what a restart without AOF or a failover to an empty replica does).
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createJobCatalog } from '../src/queue/catalog.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { scheduleTable } from '../src/queue/schedulers.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli, type CliRun } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { freePort, startOwnRedis, type OwnRedis } from './helpers/own-services.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUTAGE_MS = 30_000;

/** `trainsync <args>` in the background, with the time it took. */
function startCli(args: readonly string[], env: Record<string, string>): { done: Promise<CliRun & { ms: number }>; output(): string } {
  const started = Date.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/trainsync.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const done = new Promise<CliRun & { ms: number }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
  return { done, output: () => stdout + stderr };
}

/** A person's lines: everything on stderr but JSON log records and progress lines. */
function messageLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{') && !line.startsWith('progress '));
}

function countLines(text: string, pattern: RegExp): number {
  return text.split('\n').filter((line) => pattern.test(line)).length;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - started };
}

describe('Redis stops for 30 s and comes back empty', () => {
  let redis: OwnRedis;
  let database: TestDatabase;
  let sim: RunningSimulator;
  let worker: WorkerProcess | undefined;
  let env: Record<string, string>;
  let metricsPort: number;
  let probe: Redis;
  let queue: Queue;
  const prefix = `test-fault-redis-${process.pid}`;
  /** Waits on the worker's results job and gives up on Redis quickly: ends with the one REDIS_URL line. */
  let impatientSync: ReturnType<typeof startCli>;
  /** Waits on the same job and outlasts the outage: notices that the job vanished. */
  let patientSync: ReturnType<typeof startCli>;
  let stoppedAt = 0;

  beforeAll(async () => {
    [redis, database, sim, metricsPort] = await Promise.all([
      startOwnRedis(),
      createTestDatabase(),
      // Slow pages, one window at a time: the results sync is still running when Redis stops.
      startSimulator({ seed: 11, sizes: { results: 4_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' }, faults: { latencyMs: 60 } }),
      freePort(),
    ]);
    env = {
      TRAINSYNC_API_URL: sim.url,
      TRAINSYNC_API_KEY: sim.apiKey,
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      TRAINSYNC_QUEUE_PREFIX: prefix,
      TRAINSYNC_REQUESTS_PER_SECOND: '2000',
      TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
      TRAINSYNC_RESULTS_CONCURRENCY: '1',
      TRAINSYNC_METRICS_PORT: '0',
      TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '3000',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    };
    probe = new Redis(redis.url, { maxRetriesPerRequest: null, retryStrategy: () => 200 });
    probe.on('error', () => undefined);
    queue = new Queue(SYNC_QUEUE, { connection: probe, prefix });
    queue.on('error', () => undefined);
    worker = startWorkerProcess({ ...env, TRAINSYNC_METRICS_PORT: String(metricsPort), TRAINSYNC_SCHEDULE_CHECK_MS: '2000' });
    await Promise.race([worker.ready, worker.exited.then((code) => Promise.reject(new Error(`worker exited (${code}):\n${worker?.output()}`)))]);
  }, 30_000);

  afterAll(async () => {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill('SIGTERM');
      const timer = setTimeout(() => worker?.child.kill('SIGKILL'), 10_000);
      await worker.exited;
      clearTimeout(timer);
    }
    await queue?.close().catch(() => undefined);
    probe?.disconnect();
    await redis?.destroy();
    await sim?.close();
    await database?.drop();
  }, 30_000);

  it('keeps /healthz and /metrics answering, ends commands with one line naming REDIS_URL, and logs the outage once', async () => {
    const syncEnv = { ...env, TRAINSYNC_METRICS_PORT: '0' };
    impatientSync = startCli(['sync', 'results', '--since', '2024-01-01', '--until', '2024-12-31'], { ...syncEnv, TRAINSYNC_REDIS_TIMEOUT_MS: '4000' });
    patientSync = startCli(['sync', 'results', '--since', '2024-01-01', '--until', '2024-12-31'], { ...syncEnv, TRAINSYNC_REDIS_TIMEOUT_MS: '60000' });
    // The worker runs the job and both commands wait for it (the second joins the first: same options).
    await waitFor(async () => ((await queue.getActive()).some((job) => job.progress && typeof job.progress === 'object') ? true : undefined), 20_000, 'the results job to run and report progress');
    await waitFor(async () => (/a worker is connected/.test(impatientSync.output()) && /a worker is connected/.test(patientSync.output()) ? true : undefined), 10_000, 'both syncs to wait');

    await redis.stop();
    stoppedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 500));

    // /healthz: 503 naming redis, within a second (the client gives up after one).
    const health = await timed(() => fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(1_000) }));
    expect(health.value.status).toBe(503);
    const body = (await health.value.json()) as { status: string; failures: Record<string, string> };
    expect(Object.keys(body.failures)).toEqual(['redis']);
    expect(body.failures.redis).toMatch(/REDIS_URL/);
    expect(health.ms).toBeLessThan(1_000);
    console.log(`healthz with Redis down answered in ${health.ms} ms`);

    // /metrics: served, saying which dependency is down.
    const metrics = await timed(() => fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(2_000) }));
    expect(metrics.value.status).toBe(200);
    const text = await metrics.value.text();
    expect(text).toContain('trainsync_dependency_up{service="redis"} 0');
    expect(text).toContain('trainsync_dependency_up{service="postgres"} 1');
    console.log(`metrics with Redis down answered in ${metrics.ms} ms`);

    // A command facing the stopped Redis: one line naming REDIS_URL (password masked), no stack, bounded time.
    const status = await runCliTimed(['status'], { ...syncEnv, REDIS_URL: `redis://:s3cret@127.0.0.1:${redis.port}`, TRAINSYNC_REDIS_TIMEOUT_MS: '3000' });
    console.log(`status with Redis down exited ${status.code} after ${status.ms} ms`);
    expect(status.code).not.toBe(0);
    expect(status.ms).toBeLessThan(10_000);
    const lines = status.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^trainsync: cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ \(REDIS_URL\)/);
    expect(status.stderr).not.toContain('s3cret');
    expect(status.stderr).not.toContain('    at ');

    // The sync that gives up after 4 s: ends within the bound, with that one line.
    const impatient = await impatientSync.done;
    const waitedMs = Date.now() - stoppedAt;
    console.log(`waiting sync (TRAINSYNC_REDIS_TIMEOUT_MS=4000) exited ${impatient.code} about ${waitedMs} ms after Redis stopped`);
    expect(impatient.code).not.toBe(0);
    expect(waitedMs).toBeLessThan(15_000);
    const said = messageLines(impatient.stderr);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^trainsync: cannot connect to Redis at .* \(REDIS_URL\)/);
    expect(impatient.stderr).not.toContain('    at ');

    // The worker stays up through the outage, and says so once.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + OUTAGE_MS - Date.now())));
    expect(worker!.child.exitCode).toBeNull();
    expect(worker!.child.signalCode).toBeNull();
    const output = worker!.output();
    expect(countLines(output, /Redis unreachable/)).toBe(1);
    expect(countLines(output, /"worker error"|"queue error"|"queue events error"/)).toBe(0);
    expect(output).not.toContain('Unhandled error event');
    expect(output).not.toContain('    at ');
  }, 60_000);

  it('registers the schedules again when Redis comes back empty, and runs a new sync', async () => {
    expect(stoppedAt).toBeGreaterThan(0);
    await redis.start();
    const backAt = Date.now();
    const expected = scheduleTable(createJobCatalog(allJobs), loadConfig(env)).map((s) => s.job).sort();
    const schedulers = await waitFor(async () => {
      const found = await queue.getJobSchedulers();
      return found.length >= expected.length ? found : undefined;
    }, 15_000, 'every schedule to be registered again');
    expect(schedulers.map((s) => s.key).sort()).toEqual(expected);
    await waitFor(async () => (/is back after/.test(worker!.output()) ? true : undefined), 5_000, 'the worker to log the end of the outage');
    expect(countLines(worker!.output(), /Redis is back after/)).toBe(1);
    expect(countLines(worker!.output(), /registered them again/)).toBeGreaterThanOrEqual(1);

    // The sync that outlasted the outage notices its job is gone, instead of waiting forever.
    const patient = await patientSync.done;
    console.log(`waiting sync (TRAINSYNC_REDIS_TIMEOUT_MS=60000) exited ${patient.code} ${Date.now() - backAt} ms after Redis came back`);
    expect(patient.code).toBe(1);
    expect(patient.stdout).toMatch(/sync-results failed: the job vanished from the queue \(Redis restarted empty or failed over\?\); run the sync again/);
    expect(patient.stderr).not.toContain('    at ');

    // The worker's BullMQ Worker survived the restart: it runs a new sync.
    const courses = await runCliTimed(['sync', 'courses'], { ...env, TRAINSYNC_METRICS_PORT: '0' });
    expect(courses.code, courses.stderr).toBe(0);
    expect(courses.stderr).toMatch(/a worker is connected/);
    const done = (await queue.getCompleted()).find((job) => job.name === 'sync-courses');
    expect(done?.processedBy).toBe(`${os.hostname()}:${worker!.child.pid}`);

    const health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(1_000) });
    expect(health.status).toBe(200);
  }, 40_000);
});

async function runCliTimed(args: readonly string[], env: Record<string, string>): Promise<CliRun & { ms: number }> {
  const { value, ms } = await timed(() => runCli(args, env));
  return { ...value, ms };
}
