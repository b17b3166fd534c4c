/**
 * Redis faults, with real processes: a worker and `trainsync` commands against a
 * redis-server of this file's own, which is stopped until a waiting command has given
 * up on it, and started again empty (no persistence: what a restart without AOF or a
 * failover to an empty replica does). No elapsed time is asserted here: how fast
 * /healthz, /metrics and the commands answer during the outage is measured by
 * `npm run bench -- timings` (bench/test-timings.ts).
 */
import os from 'node:os';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { loadConfig } from '../src/config.ts';
import { createJobCatalog } from '../src/queue/catalog.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { scheduleTable } from '../src/queue/schedulers.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { runCli, startCli, stderrSaid } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { freePort, startOwnRedis, type OwnRedis } from './helpers/own-services.ts';
import { OUTAGE_SIMULATOR, outageEnv } from './helpers/redis-outage.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

/** Generous: an answer, however slow on a busy machine, is what counts; a hang fails. */
const ANSWER_TIMEOUT_MS = 15_000;

/** A person's lines: everything on stderr but JSON log records and progress lines. */
function messageLines(stderr: string): string[] {
  return stderrSaid(stderr).split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{') && !line.startsWith('progress '));
}

function countLines(text: string, pattern: RegExp): number {
  return text.split('\n').filter((line) => pattern.test(line)).length;
}

describe('Redis stops and comes back empty', () => {
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
  let stopped = false;

  beforeAll(async () => {
    [redis, database, sim, metricsPort] = await Promise.all([
      startOwnRedis(),
      createTestDatabase(),
      startSimulator(OUTAGE_SIMULATOR),
      freePort(),
    ]);
    env = outageEnv({ apiUrl: sim.url, apiKey: sim.apiKey, databaseUrl: database.url, redisUrl: redis.url, prefix });
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
    stopped = true;

    // /healthz: answers (it does not hang on the outage), and once the worker has noticed, 503 saying redis is down (its state only: the words are in the log).
    const healthz = async (): Promise<{ status: number; body: Record<string, string> }> => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
      return { status: response.status, body: (await response.json()) as Record<string, string> };
    };
    const health = await waitFor(async () => {
      const answer = await healthz();
      return answer.status === 503 ? answer : undefined;
    }, 20_000, '/healthz to report the outage');
    expect(health.body).toEqual({ status: 'degraded', postgres: 'up', redis: 'down' });

    // /metrics: served, saying which dependency is down.
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain('trainsync_dependency_up{service="redis"} 0');
    expect(text).toContain('trainsync_dependency_up{service="postgres"} 1');

    // A command facing the stopped Redis ends (it does not hang): one line naming REDIS_URL (password masked), no stack.
    const status = await runCli(['status'], { ...syncEnv, REDIS_URL: `redis://:s3cret@127.0.0.1:${redis.port}`, TRAINSYNC_REDIS_TIMEOUT_MS: '3000' });
    expect(status.code).not.toBe(0);
    const lines = stderrSaid(status.stderr).split('\n').filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^trainsync: cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ \(REDIS_URL\)/);
    expect(status.stderr).not.toContain('s3cret');
    expect(status.stderr).not.toContain('    at ');

    // The sync that gives up after 4 s ends, with that one line.
    const impatient = await impatientSync.done;
    expect(impatient.code).not.toBe(0);
    const said = messageLines(impatient.stderr);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^trainsync: cannot connect to Redis at .* \(REDIS_URL\)/);
    expect(impatient.stderr).not.toContain('    at ');

    // The worker outlasts what made a command give up: still serving /healthz (503) after it, and it says so once.
    expect((await healthz()).status).toBe(503);
    await waitFor(async () => (/Redis unreachable/.test(worker!.output()) ? true : undefined), 10_000, 'the worker to log the outage');
    expect(worker!.child.exitCode).toBeNull();
    expect(worker!.child.signalCode).toBeNull();
    const output = worker!.output();
    expect(countLines(output, /Redis unreachable/)).toBe(1);
    expect(countLines(output, /"worker error"|"queue error"|"queue events error"/)).toBe(0);
    expect(output).not.toContain('Unhandled error event');
    expect(output).not.toContain('    at ');
  }, 60_000);

  it('registers the schedules again when Redis comes back empty, and runs a new sync', async () => {
    expect(stopped).toBe(true);
    await redis.start();
    const expected = scheduleTable(createJobCatalog(allJobs), loadConfig(env)).map((s) => s.job).sort();
    const schedulers = await waitFor(async () => {
      const found = await queue.getJobSchedulers();
      return found.length >= expected.length ? found : undefined;
    }, 15_000, 'every schedule to be registered again');
    expect(schedulers.map((s) => s.key).sort()).toEqual(expected);
    await waitFor(async () => (/is back after/.test(worker!.output()) ? true : undefined), 15_000, 'the worker to log the end of the outage');
    // The schedules reach Redis before the worker's line saying so reaches its output: waited for, not raced.
    await waitFor(async () => (/registered them again/.test(worker!.output()) ? true : undefined), 15_000, 'the worker to log the schedules it registered again');
    expect(countLines(worker!.output(), /Redis is back after/)).toBe(1);

    // The sync that outlasted the outage notices its job is gone, instead of waiting forever.
    const patient = await patientSync.done;
    expect(patient.code).toBe(1);
    expect(patient.stdout).toMatch(/sync-results failed: the job vanished from the queue \(Redis restarted empty or failed over\?\); run the sync again/);
    expect(patient.stderr).not.toContain('    at ');

    // The worker's BullMQ Worker survived the restart: it runs a new sync.
    const courses = await runCli(['sync', 'courses'], { ...env, TRAINSYNC_METRICS_PORT: '0' });
    expect(courses.code, courses.stderr).toBe(0);
    expect(courses.stderr).toMatch(/a worker is connected/);
    const done = (await queue.getCompleted()).find((job) => job.name === 'sync-courses');
    expect(done?.processedBy).toBe(`${os.hostname()}:${worker!.child.pid}`);

    const health = await waitFor(async () => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
      return response.status === 200 ? response.status : undefined;
    }, 15_000, '/healthz to be healthy again');
    expect(health).toBe(200);
  }, 60_000);
});
